"""Waiting for the driver: the validator's `driver-ready` file and the driver paths it records.

Under the operator, the plugin may start only once the driver validation passed. NVIDIA's image runs an
entrypoint script that waits for `<validations>/driver-ready` and exports the `KEY=value` lines it holds
(`NVIDIA_DRIVER_ROOT`, `DRIVER_ROOT_CTR_PATH`, `NVIDIA_DEV_ROOT`, `DEV_ROOT_CTR_PATH`, `IS_HOST_DRIVER`) over
the pod's environment. The agent does the same itself: when the validations directory exists (the operand
mounts it), it waits for the file, still answering stop signals, and lays its values over the environment.
Outside the operator the directory does not exist and nothing is waited for.

That entrypoint also offers GPUDirect Storage (with MOFED) and GDRCopy to pods when their kernel modules
(`nvidia_fs`, `gdrdrv`) are loaded and the DaemonSet did not decide; :func:`storage_defaults` does the same.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from gpu_operator.agents.signals import STOP, SignalSource

__all__ = ["DRIVER_READY", "POLL_SECONDS", "read_driver_ready", "storage_defaults", "wait_for_driver"]

_log = logging.getLogger(__name__)

DRIVER_READY = "driver-ready"
POLL_SECONDS = 5.0
#: Kernel module -> the variables it turns on when the DaemonSet left its first one unset.
_STORAGE_MODULES: dict[str, tuple[str, ...]] = {
    "nvidia_fs": ("GDS_ENABLED", "MOFED_ENABLED"),
    "gdrdrv": ("GDRCOPY_ENABLED",),
}


def storage_defaults(environ: Mapping[str, str], modules_file: str = "/proc/modules") -> dict[str, str]:
    """`environ` with GDS/MOFED and GDRCopy turned on where their modules are loaded and nothing decided."""
    try:
        with open(modules_file, encoding="ascii", errors="replace") as lines:
            loaded = {line.split(" ", 1)[0] for line in lines}
    except OSError:
        return dict(environ)
    result = dict(environ)
    for module, variables in _STORAGE_MODULES.items():
        first, *others = variables
        if module in loaded and not environ.get(first):
            result[first] = "true"
            result.update({name: "true" for name in others if not result.get(name)})
    return result


def read_driver_ready(path: str) -> dict[str, str]:
    """The file's `KEY=value` lines (blank and comment lines skipped). Raises OSError when it cannot be read."""
    with open(path, encoding="utf-8") as lines:
        pairs = (line.strip().split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
        return {key.strip(): value.strip() for key, value in (p for p in pairs if len(p) == 2)}


def wait_for_driver(validations_dir: str, environ: Mapping[str, str], signals: SignalSource,
                    poll_seconds: float = POLL_SECONDS) -> dict[str, str] | None:
    """The environment to run with; None when a stop signal came while waiting."""
    if not validations_dir or not os.path.isdir(validations_dir):
        return dict(environ)
    path = os.path.join(validations_dir, DRIVER_READY)
    announced = False
    while not os.path.exists(path):
        if not announced:
            _log.info("waiting for %s (the driver validation)", path)
            announced = True
        if signals.wait(poll_seconds) in STOP:
            return None
    return {**environ, **read_driver_ready(path)}
