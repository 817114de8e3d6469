"""`gpu-operator-agent device-plugin`: the kubelet device plugin's command line and main loop.

Accepts NVIDIA's plugin flags and environment variables (see :mod:`.settings`) plus `--nvml`, waits for the
driver under the operator (:mod:`.driver_ready`), opens NVML, starts the plugin set and waits for signals.
SIGHUP re-reads the settings and the config file (the config-manager sidecar sends it after copying the file
a `nvidia.com/device-plugin.config` label selects) and
restarts the plugins with them; a new config that cannot be applied is reported and the running plugins stay
as they were. SIGINT/SIGTERM/SIGQUIT stop everything. Start-up failures are one line on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from gpu_operator.agents.device_plugin.devices import DeviceError
from gpu_operator.agents.device_plugin.driver_ready import storage_defaults, wait_for_driver
from gpu_operator.agents.device_plugin.manager import PluginManager
from gpu_operator.agents.device_plugin.settings import Settings, SettingsError, add_arguments, resolve_settings
from gpu_operator.agents.nvml import Nvml, NvmlError, open_nvml
from gpu_operator.agents.signals import RELOAD, STOP, SignalQueue, SignalSource

__all__ = ["NAME", "PluginFailure", "build_parser", "open_gpus", "start_plugins", "serve", "main"]

NAME = "device-plugin"
PROGRAM = f"gpu-operator-agent {NAME}"
_log = logging.getLogger(__name__)


class PluginFailure(RuntimeError):
    """Why the plugin cannot run, in one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Advertise the node's GPUs to the kubelet.")
    add_arguments(parser)
    return parser


def open_gpus(settings: Settings) -> Nvml:
    """The NVML the settings choose, or PluginFailure."""
    try:
        return open_nvml(settings.nvml, fail_on_init_error=settings.fail_on_init_error,
                         driver_root_paths=(settings.driver_root_ctr_path,))
    except NvmlError as error:
        raise PluginFailure(f"NVML is not available: {error}") from error
    except ValueError as error:
        raise PluginFailure(str(error)) from error


def start_plugins(settings: Settings, nvml: Nvml, environ: Mapping[str, str]) -> PluginManager:
    """A started plugin set, or PluginFailure with nothing left running."""
    try:
        manager = PluginManager(settings, nvml, environ)
    except ValueError as error:
        raise PluginFailure(str(error)) from error
    try:
        manager.start()
    except DeviceError as error:
        raise PluginFailure(str(error)) from error
    except (OSError, RuntimeError) as error:
        raise PluginFailure(f"cannot start the plugin servers: {error}") from error
    return manager


def _reload(current: PluginManager, load: Callable[[Mapping[str, str]], Settings], nvml: Nvml,
            environ: Mapping[str, str]) -> PluginManager:
    try:
        settings = load(environ)
    except SettingsError as error:
        _log.error("not reloading: %s; the running plugins are unchanged", error)
        return current
    current.stop()
    try:
        return start_plugins(settings, nvml, environ)
    except PluginFailure as failure:
        _log.error("the reloaded config cannot be applied: %s; restarting with the previous one", failure)
        return start_plugins(current.settings, nvml, environ)


def _settings(load: Callable[[Mapping[str, str]], Settings], environ: Mapping[str, str]) -> Settings:
    try:
        return load(environ)
    except SettingsError as error:
        raise PluginFailure(str(error)) from error


def serve(load: Callable[[Mapping[str, str]], Settings], environ: Mapping[str, str], signals: SignalSource,
          open_nvml_for: Callable[[Settings], Nvml] = open_gpus) -> int:
    """Run until a stop signal; returns the exit status. Raises PluginFailure when start-up fails.

    `load` resolves the settings from an environment: first the pod's, then (once the driver is ready) the
    pod's with the driver paths of `driver-ready` over it.
    """
    validations = _settings(load, environ).validations_dir
    ready = wait_for_driver(validations, environ, signals)
    if ready is None:
        return 0
    # under the operator (its validations directory mounted) the loaded storage modules decide, as its entrypoint
    environ = storage_defaults(ready) if os.path.isdir(validations) else ready
    settings = _settings(load, environ)
    nvml = open_nvml_for(settings)
    try:
        manager = start_plugins(settings, nvml, environ)
        try:
            while True:
                received = signals.wait(None)
                if received == RELOAD:
                    _log.info("SIGHUP: reloading the config and restarting the plugins")
                    manager = _reload(manager, load, nvml, environ)
                elif received in STOP:
                    return 0
        finally:
            manager.stop()
    finally:
        nvml.close()


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the device plugin; returns the exit status."""
    arguments = vars(build_parser().parse_args(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    env = os.environ if environ is None else environ
    with SignalQueue() as signals:
        try:
            return serve(lambda variables: resolve_settings(arguments, variables), env, signals)
        except PluginFailure as failure:
            print(f"{PROGRAM}: {failure}", file=sys.stderr)
            return 1
