"""`gpu-operator-agent feature-discovery`: GPU feature discovery's command line.

Accepts GFD's flags and environment variables (see :mod:`.settings`) plus `--nvml`, wires the real world
(NVML, the machine-type file, signals, the clock, the chosen sink) into the labelling loop and turns failures
into one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence

from gpu_operator.agents.feature_discovery.loop import (
    AgentFailure,
    Dependencies,
    read_machine_type,
    run,
)
from gpu_operator.agents.feature_discovery.publishing import build_sink
from gpu_operator.agents.feature_discovery.settings import (
    Settings,
    SettingsError,
    add_arguments,
    resolve_settings,
)
from gpu_operator.agents.feature_discovery.sinks import LabelSink, SinkUnavailable
from gpu_operator.agents.nvml import Nvml, NvmlError, open_nvml
from gpu_operator.agents.signals import SignalQueue

__all__ = ["NAME", "Loader", "build_parser", "open_gpus", "make_sink", "main"]

NAME = "feature-discovery"
PROGRAM = f"gpu-operator-agent {NAME}"
#: Discovery strategies this agent implements (NVML only: no Tegra, no VFIO passthrough scan).
SUPPORTED_DISCOVERY = frozenset({"auto", "nvml"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Label GPU nodes with what their GPUs are (GFD).")
    add_arguments(parser)
    return parser


class Loader:
    """Re-reads the settings (and the config file) each time it is called: once per run."""

    def __init__(self, cli: Mapping[str, str | None], environ: Mapping[str, str]) -> None:
        self._cli = cli
        self._environ = environ

    def __call__(self) -> Settings:
        try:
            return resolve_settings(self._cli, self._environ)
        except SettingsError as error:
            raise AgentFailure(str(error)) from error


def open_gpus(settings: Settings) -> Nvml:
    """The NVML the settings choose (`--nvml`, driver root, fail-on-init-error), or AgentFailure."""
    if settings.device_discovery_strategy not in SUPPORTED_DISCOVERY:
        raise AgentFailure(f"device discovery strategy {settings.device_discovery_strategy!r} is not supported")
    try:
        return open_nvml(
            settings.nvml,
            fail_on_init_error=settings.fail_on_init_error,
            driver_root_paths=(settings.driver_root_ctr_path,),
        )
    except NvmlError as error:
        raise AgentFailure(f"NVML is not available: {error}") from error
    except ValueError as error:
        raise AgentFailure(str(error)) from error


def make_sink(settings: Settings, nvml: Nvml) -> LabelSink:
    """The output GFD's flags select (file, stdout or NodeFeature API, plus the GPU inventory), or AgentFailure."""
    try:
        return build_sink(settings, nvml)
    except SinkUnavailable as error:
        raise AgentFailure(str(error)) from error


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run feature discovery; returns the exit status."""
    arguments = vars(build_parser().parse_args(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    env = os.environ if environ is None else environ
    with SignalQueue() as signals:
        deps = Dependencies(
            load_settings=Loader(arguments, env),
            open_nvml=open_gpus,
            make_sink=make_sink,
            read_machine_type=read_machine_type,
            signals=signals,
            clock=time.time,
        )
        try:
            return run(deps)
        except AgentFailure as failure:
            print(f"{PROGRAM}: {failure}", file=sys.stderr)
            return 1
