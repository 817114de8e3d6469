"""Where an option of an agent that reads the device plugin's config file takes its value from.

The device plugin and feature discovery resolve each option the same way: its flag, then its environment
variable, then the config file's `flags` (the file named by the `config_file` option), then the default. A value
that does not parse raises the agent's own settings error, naming where it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpu_operator.agents import options
from gpu_operator.agents.options import Option
from gpu_operator.agents.plugin_config.model import PluginConfig
from gpu_operator.agents.plugin_config.parse import PluginConfigError, load_plugin_config

__all__ = ["option_value", "config_file", "resolve_values"]

Cli = Mapping[str, str | None]


def option_value(
    option: Option, cli: Cli, environ: Mapping[str, str], config: PluginConfig, error: type[ValueError]
) -> Any:
    """One option's value: flag, environment, config file flag, default."""
    text, source = options.given(option, cli, environ)
    if text is not None:
        return options.parse_given(option, text, source, error)
    in_file = None if option.file_path is None else config.flag(*option.file_path)
    if in_file is None:
        return option.default
    where = "config file flags." + ".".join(option.file_path or ())
    try:
        return (option.from_file or (lambda v: option.parse(str(v))))(in_file)
    except (ValueError, TypeError) as cause:
        raise error(f"invalid value {in_file!r} for {where}: {cause}") from cause


def config_file(
    all_options: Iterable[Option], cli: Cli, environ: Mapping[str, str], error: type[ValueError]
) -> tuple[str, PluginConfig]:
    """The config file the `config_file` option names (by flag or environment) and its contents."""
    option = next(o for o in all_options if o.name == "config_file")
    path = option_value(option, cli, environ, PluginConfig(), error)
    if not path:
        return "", PluginConfig()
    try:
        return path, load_plugin_config(path)
    except PluginConfigError as cause:
        raise error(f"unable to load config file {path}: {cause}") from cause


def resolve_values(
    all_options: Iterable[Option], cli: Cli, environ: Mapping[str, str], error: type[ValueError]
) -> tuple[str, PluginConfig, dict[str, Any]]:
    """The config file's path and contents, and every other option's value by name."""
    all_options = tuple(all_options)
    path, config = config_file(all_options, cli, environ, error)
    values = {o.name: option_value(o, cli, environ, config, error) for o in all_options if o.name != "config_file"}
    return path, config, values
