"""What the MIG manager does on the host itself: reset GPUs whose MIG mode is pending, and reboot.

Both run in the host's root, mounted at `/host`: `nvidia-smi -r -i <bus ids>` from the driver root (the host's
own, or the driver container's under `/run/nvidia/driver`), as mig-parted does when a mode stays pending, and
`reboot` when `WITH_REBOOT` allows it and a reset was not enough.
"""

from __future__ import annotations

import logging
import posixpath
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpu_operator.agents.mig_manager.hardware import MigHardwareError

__all__ = ["HostActions"]

_log = logging.getLogger(__name__)


def _run(command: Sequence[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 127, str(error)
    return done.returncode, (done.stdout + done.stderr).strip()


@dataclass(frozen=True, slots=True)
class HostActions:
    driver_root: str = "/"
    host_root: str = "/host"
    runner: Callable[[Sequence[str]], tuple[int, str]] = _run

    def reset_gpus(self, bus_ids: list[str]) -> None:
        """Reset the GPUs; a failed reset leaves the mode pending, which the caller reports."""
        if not bus_ids:
            return
        root = posixpath.join(self.host_root, self.driver_root.lstrip("/"))
        status, output = self.runner(["chroot", root, "nvidia-smi", "-r", "-i", ",".join(bus_ids)])
        if status != 0:
            _log.warning("GPU reset failed (%d): %s", status, output)

    def reboot(self) -> None:
        status, output = self.runner(["chroot", self.host_root, "reboot"])
        if status != 0:
            raise MigHardwareError(f"reboot failed ({status}): {output or 'no output'}")
