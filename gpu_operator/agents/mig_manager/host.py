"""What the MIG manager does on the host itself: reset GPUs whose MIG mode is pending, and reboot.

Both run in the host's root, mounted at `/host`: `nvidia-smi -r -i <bus ids>` from the driver root (the host's
own, or the driver container's under `/run/nvidia/driver`), as mig-parted does when a mode stays pending, and
`reboot` when `WITH_REBOOT` allows it and a reset was not enough. The health monitor's host-actions server resets
and reboots through the same code.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass

from gpu_operator.agents.mig_manager.hardware import MigHardwareError
from gpu_operator.agents.mig_manager.host_commands import Runner, command_runner

__all__ = ["HostActions"]

_log = logging.getLogger(__name__)


_run = command_runner(300)


@dataclass(frozen=True, slots=True)
class HostActions:
    driver_root: str = "/"
    host_root: str = "/host"
    runner: Runner = _run

    def reset_gpus(self, bus_ids: list[str]) -> str | None:
        """Reset the GPUs; None when done, else why not (logged: for the MIG manager a failed reset leaves the
        mode pending, which it reports)."""
        if not bus_ids:
            return None
        root = posixpath.join(self.host_root, self.driver_root.lstrip("/"))
        status, output = self.runner(["chroot", root, "nvidia-smi", "-r", "-i", ",".join(bus_ids)])
        if status != 0:
            _log.warning("GPU reset failed (%d): %s", status, output)
            return f"nvidia-smi -r failed ({status}): {output or 'no output'}"
        return None

    def reboot(self) -> None:
        status, output = self.runner(["chroot", self.host_root, "reboot"])
        if status != 0:
            raise MigHardwareError(f"reboot failed ({status}): {output or 'no output'}")
