"""Feature discovery settings: GFD's flags, their environment variables and the config file, with GFD's rules.

Each setting is a row of :data:`OPTIONS`: its flags, its environment variables, where it sits in the device
plugin config file (`flags.migStrategy`, `flags.gfd.sleepInterval`, ...) and its default. A value is taken from
the first of: the command line, the environment (variables in the listed order), the config file, the
default - the precedence urfave/cli gives GFD, where a flag counts as set when given on the command line or
through its environment variable. The config file is itself found that way (`--config-file`, then
`GFD_CONFIG_FILE`, then `CONFIG_FILE`), and also supplies the sharing setup.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_operator.agents import options
from gpu_operator.agents.feature_discovery.mig_strategy import MigStrategy
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents.plugin_config import PluginConfig
from gpu_operator.agents.plugin_config.settings import resolve_values
from gpu_operator.agents.values import parse_bool, parse_duration

__all__ = [
    "DEFAULT_OUTPUT_FILE",
    "DEFAULT_MACHINE_TYPE_FILE",
    "INFINITE",
    "DISCOVERY_STRATEGIES",
    "Option",
    "OPTIONS",
    "Settings",
    "SettingsError",
    "add_arguments",
    "resolve_settings",
]

DEFAULT_OUTPUT_FILE = "/etc/kubernetes/node-feature-discovery/features.d/gfd"
DEFAULT_MACHINE_TYPE_FILE = "/sys/class/dmi/id/product_name"
DEFAULT_DRIVER_ROOT_CTR_PATH = "/driver-root"
INFINITE = "infinite"
DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra", "vfio")
_NANOSECONDS = 1e-9


class SettingsError(ValueError):
    """A flag, variable or config file value GFD would refuse."""


def _sleep_interval(text: str) -> float | None:
    """A Go duration in seconds, or None for `infinite` (label once, then stay up)."""
    return None if text.strip() == INFINITE else parse_duration(text)


def _sleep_interval_in_file(value: Any) -> float | None:
    """The config file holds a duration string, or a number of nanoseconds (Go's JSON form)."""
    if isinstance(value, bool):
        raise TypeError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        return value * _NANOSECONDS
    return _sleep_interval(str(value))


def _strict_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, not {value!r}")
    return value


def _discovery_strategy(text: str) -> str:
    if text not in DISCOVERY_STRATEGIES:
        raise ValueError(f"invalid --device-discovery-strategy option {text}")
    return text


@dataclass(frozen=True, slots=True)
class Option(options.Option):
    """One setting, which may also come from the device-plugin config file's `flags` (`file_path` within it)."""

    file_path: tuple[str, ...] | None = None
    from_file: Callable[[Any], Any] | None = None


OPTIONS: tuple[Option, ...] = (
    Option(
        name="mig_strategy",
        flags=("--mig-strategy",),
        env=("GFD_MIG_STRATEGY", "MIG_STRATEGY"),
        file_path=("migStrategy",),
        parse=MigStrategy,
        default=MigStrategy.NONE,
        help="the strategy for exposing MIG devices on GPUs that support it: none | single | mixed",
    ),
    Option(
        name="fail_on_init_error",
        flags=("--fail-on-init-error",),
        env=("GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR"),
        file_path=("failOnInitError",),
        parse=parse_bool,
        default=True,
        help="fail if NVML cannot be initialised; otherwise label as a node without GPUs",
        from_file=_strict_bool,
        boolean=True,
    ),
    Option(
        name="oneshot",
        flags=("--oneshot",),
        env=("GFD_ONESHOT",),
        file_path=("gfd", "oneshot"),
        parse=parse_bool,
        default=False,
        help="label once and exit",
        from_file=_strict_bool,
        boolean=True,
    ),
    Option(
        name="no_timestamp",
        flags=("--no-timestamp",),
        env=("GFD_NO_TIMESTAMP",),
        file_path=("gfd", "noTimestamp"),
        parse=parse_bool,
        default=False,
        help="do not add the nvidia.com/gfd.timestamp label",
        from_file=_strict_bool,
        boolean=True,
    ),
    Option(
        name="sleep_interval",
        flags=("--sleep-interval",),
        env=("GFD_SLEEP_INTERVAL",),
        file_path=("gfd", "sleepInterval"),
        parse=_sleep_interval,
        default=60.0,
        help="time between labelling runs (a Go duration, or 'infinite')",
        from_file=_sleep_interval_in_file,
    ),
    Option(
        name="output_file",
        flags=("--output-file", "--output", "-o"),
        env=("GFD_OUTPUT_FILE",),
        file_path=("gfd", "outputFile"),
        parse=str,
        default=DEFAULT_OUTPUT_FILE,
        help="the features.d file to write; empty prints the labels to stdout",
    ),
    Option(
        name="machine_type_file",
        flags=("--machine-type-file",),
        env=("GFD_MACHINE_TYPE_FILE",),
        file_path=("gfd", "machineTypeFile"),
        parse=str,
        default=DEFAULT_MACHINE_TYPE_FILE,
        help="a file holding the node's DMI product name",
    ),
    Option(
        name="config_file",
        flags=("--config-file",),
        env=("GFD_CONFIG_FILE", "CONFIG_FILE"),
        file_path=None,
        parse=str,
        default="",
        help="the device plugin config file (flags and sharing)",
    ),
    Option(
        name="use_node_feature_api",
        flags=("--use-node-feature-api",),
        env=("GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"),
        file_path=("useNodeFeatureAPI",),
        parse=parse_bool,
        default=True,
        help="publish the labels as an NFD NodeFeature object instead of a file",
        from_file=_strict_bool,
        boolean=True,
    ),
    Option(
        name="device_discovery_strategy",
        flags=("--device-discovery-strategy",),
        env=("DEVICE_DISCOVERY_STRATEGY",),
        file_path=("deviceDiscoveryStrategy",),
        parse=_discovery_strategy,
        default="auto",
        help="how devices are discovered: auto | nvml | tegra | vfio",
    ),
    Option(
        name="driver_root_ctr_path",
        flags=("--driver-root-ctr-path", "--container-driver-root"),
        env=("DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"),
        file_path=None,
        parse=str,
        default=DEFAULT_DRIVER_ROOT_CTR_PATH,
        help="where the driver root is mounted in the container (searched for libnvidia-ml.so.1)",
    ),
    Option(
        name="namespace",
        flags=("--namespace",),
        env=("NAMESPACE",),
        file_path=None,
        parse=str,
        default="",
        help="the pod's namespace (NodeFeature mode)",
    ),
    Option(
        name="node_name",
        flags=("--node-name",),
        env=("NODE_NAME",),
        file_path=None,
        parse=str,
        default="",
        help="the node's name (NodeFeature mode)",
    ),
    Option(
        name="pod_name",
        flags=("--pod-name",),
        env=("POD_NAME",),
        file_path=None,
        parse=str,
        default="",
        help="the pod's name (NodeFeature mode)",
    ),
    Option(
        name="kubeconfig",
        flags=("--kubeconfig",),
        env=("KUBECONFIG",),
        file_path=None,
        parse=str,
        default="",
        help="a kubeconfig file for the API (default: the pod's service account)",
    ),
    Option(
        name="publish_gpu_devices",
        flags=("--publish-gpu-devices",),
        env=("GFD_PUBLISH_GPU_DEVICES",),
        file_path=None,
        parse=parse_bool,
        default=False,
        help="also publish one GpuDevice object (gpu.pulumi-gpu-operator.io) per GPU",
        boolean=True,
    ),
    Option(
        name="nvml",
        flags=("--nvml",),
        env=(NVML_ENV,),
        file_path=None,
        parse=str,
        default="auto",
        help="NVML to use: 'auto' (the driver's) or 'fake:<profile>' (a simulated node)",
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, resolved, plus the parsed config file."""

    mig_strategy: MigStrategy = MigStrategy.NONE
    fail_on_init_error: bool = True
    oneshot: bool = False
    no_timestamp: bool = False
    sleep_interval: float | None = 60.0
    output_file: str = DEFAULT_OUTPUT_FILE
    machine_type_file: str = DEFAULT_MACHINE_TYPE_FILE
    config_file: str = ""
    use_node_feature_api: bool = True
    device_discovery_strategy: str = "auto"
    driver_root_ctr_path: str = DEFAULT_DRIVER_ROOT_CTR_PATH
    namespace: str = ""
    node_name: str = ""
    pod_name: str = ""
    kubeconfig: str = ""
    publish_gpu_devices: bool = False
    nvml: str = "auto"
    plugin_config: PluginConfig = field(default_factory=PluginConfig)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every option's flags; unset flags stay None so the environment and the file can decide."""
    options.add_arguments(parser, OPTIONS)


def resolve_settings(cli: Mapping[str, str | None], environ: Mapping[str, str]) -> Settings:
    """Settings from parsed flags (name -> text or None), the environment, and the config file they name."""
    path, config, values = resolve_values(OPTIONS, cli, environ, SettingsError)
    return Settings(config_file=path, plugin_config=config, **values)
