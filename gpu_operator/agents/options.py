"""Agent settings as a table: each option names its flags, its environment variables, a parser and a default.

Every agent accepts the flags AND the environment variables of the NVIDIA program it replaces, so the DaemonSets
keep upstream env. A value comes from the command line, else the first of its variables that is set, else the
default (the urfave/cli precedence NVIDIA's Go programs use). Boolean flags may be given bare (`--oneshot`) or
with a value (`--oneshot=false`), as Go's flag package allows.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.values import parse_bool

__all__ = ["Option", "flag_option", "add_arguments", "given", "parse_given", "resolve"]


@dataclass(frozen=True, slots=True)
class Option:
    """One setting: its flags (none for environment-only settings), variables, parser, default and help."""

    name: str
    flags: tuple[str, ...]
    env: tuple[str, ...]
    parse: Callable[[str], Any]
    default: Any
    help: str
    boolean: bool = False


def flag_option(name: str, flags: tuple[str, ...], env: str | tuple[str, ...], default: bool, help: str) -> Option:
    """A boolean option spelled as Go spells booleans (`true`, `1`, `false`, ...)."""
    variables = (env,) if isinstance(env, str) else env
    return Option(name, flags, variables, parse_bool, default, help, boolean=True)


def add_arguments(parser: argparse.ArgumentParser, options: Iterable[Option]) -> None:
    """Declare the flags; unset flags stay None so that the environment (or a file) can decide."""
    for option in options:
        if not option.flags:
            continue
        extra: dict[str, Any] = {"nargs": "?", "const": "true", "metavar": "BOOL"} if option.boolean else {}
        parser.add_argument(*option.flags, dest=option.name, default=None, help=option.help, **extra)


def given(option: Option, cli: Mapping[str, str | None], environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The option's text and where it came from (a flag or a variable); (None, "") when neither is set."""
    text = cli.get(option.name)
    if text is not None:
        return text, max(option.flags, key=len) if option.flags else option.name
    present = next((name for name in option.env if name in environ), None)
    return (None, "") if present is None else (environ[present], present)


def parse_given(option: Option, text: str, source: str, error: type[ValueError]) -> Any:
    """Parse one option's text; a refused value raises `error` naming where it came from."""
    try:
        return option.parse(text)
    except (ValueError, TypeError) as cause:
        raise error(f"invalid value {text!r} for {source}: {cause}") from cause


def resolve(
    options: Iterable[Option], cli: Mapping[str, str | None], environ: Mapping[str, str], error: type[ValueError]
) -> dict[str, Any]:
    """Every option's value: the flag, else its first variable set, else the default."""
    values: dict[str, Any] = {}
    for option in options:
        text, source = given(option, cli, environ)
        values[option.name] = option.default if text is None else parse_given(option, text, source, error)
    return values
