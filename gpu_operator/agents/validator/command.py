"""`gpu-operator-agent validator`: NVIDIA's `nvidia-validator`, one component per run.

Reads `nvidia-validator`'s flags and environment (see :mod:`.settings`), prepares the status directory
(`CLEANUP_ALL` empties it first), runs the chosen component's check (:mod:`.components`) and exits 0 when it
passed. A failure is one `error validating <component>: <reason>` message on stderr and exit status 1; a bad
flag or a component this agent does not provide is exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_operator.agents.validator.components import COMPONENTS, ELSEWHERE
from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.errors import ValidationFailed
from gpu_operator.agents.validator.settings import Settings, SettingsError, add_arguments, resolve_settings

__all__ = ["NAME", "PROGRAM", "build_parser", "check_settings", "main", "run"]

NAME = "validator"
PROGRAM = f"gpu-operator-agent {NAME}"

#: Setting -> the flag NVIDIA's messages name it by.
_FLAG_NAMES = {"node_name": "-n <node-name>", "namespace": "-ns <namespace>"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Validate one GPU operator component on this node.")
    add_arguments(parser)
    return parser


def check_settings(settings: Settings) -> None:
    """NVIDIA's flag checks; raises SettingsError with its wording."""
    name = settings.component
    if not name:
        raise SettingsError("invalid -c <component-name> flag: must not be empty string")
    if name in ELSEWHERE:
        raise SettingsError(f"component {name!r} {ELSEWHERE[name]}")
    if name not in COMPONENTS:
        raise SettingsError(f"invalid -c <component-name> flag value: {name}")
    for required in COMPONENTS[name].requires:
        if not getattr(settings, required):
            raise SettingsError(f"invalid {_FLAG_NAMES[required]} flag: must not be empty string for {name} validation")
    if settings.skip_validation and not COMPONENTS[name].skippable:
        raise SettingsError(f"skipping validation is not supported for component: {name}")


def run(ctx: Context) -> None:
    """Run the chosen component's check (or, with SKIP_VALIDATION, only recreate its file)."""
    settings = ctx.settings
    component = COMPONENTS[settings.component]
    ctx.status.prepare(settings.cleanup_all)
    if settings.skip_validation:
        logging.getLogger(__name__).warning(
            "skipping validation of component %r as requested; creating %s without validation",
            settings.component,
            component.status_file,
        )
        ctx.status.remove(component.status_file)
        ctx.status.write(component.status_file)
        return
    component.check(ctx)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, **context: Any) -> int:
    """Validate one component; returns the exit status. `context` overrides parts of the Context (tests)."""
    arguments = vars(build_parser().parse_args(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    env = dict(os.environ if environ is None else environ)
    try:
        settings = resolve_settings(arguments, env)
        check_settings(settings)
    except SettingsError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 2
    ctx = Context(settings, environ=env, **context)
    try:
        run(ctx)
    except ValidationFailed as failure:
        print(f"{PROGRAM}: error validating {settings.component}: {failure}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"{PROGRAM}: {settings.component}: {error}", file=sys.stderr)
        return 1
    finally:
        ctx.close()
    print(f"{settings.component} validation is successful")
    return 0
