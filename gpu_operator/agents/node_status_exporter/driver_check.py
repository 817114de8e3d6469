"""Is the NVIDIA driver working? The validator's driver check, rerun quietly for the driver gauges.

The check runs `nvidia-smi` and passes when it exits 0, trying in turn:

1. a driver installed on the host (the host's root is mounted at `/host`): a WSL2 host passes when its
   `/usr/lib/wsl/lib/nvidia-smi` is there; otherwise the first `nvidia-smi` in the host's `/usr/bin`,
   `/usr/sbin`, `/bin`, `/sbin` or `/opt/bin` (read-only-/usr hosts such as Flatcar) runs inside the host's
   root (chroot; run directly when the host root is `/`);
2. a driver container's installation (`/run/nvidia/driver`): its `nvidia-smi`, run inside that root.

With `--driver-validation-skip-gpu-init` the command is `nvidia-smi --version`, which needs no GPU (GPUs bound
to vfio-pci). Unlike the validator's own driver step this neither waits for the driver container nor asks the
API server whether the operator manages it: a working `nvidia-smi` is what the gauge reports.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["HOST_SMI_DIRS", "WSL_SMI", "DriverCheck", "NvidiaSmiCheck", "Runner", "run_quietly"]

_log = logging.getLogger(__name__)

HOST_SMI_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/opt/bin")
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
_SMI = "nvidia-smi"
_TIMEOUT_SECONDS = 60

#: Runs a command, returning its exit status (non-zero also when it cannot be started).
Runner = Callable[[Sequence[str]], int]


class DriverCheck(Protocol):
    def __call__(self) -> bool: ...


def run_quietly(command: Sequence[str]) -> int:
    try:
        completed = subprocess.run(command, capture_output=True, timeout=_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        _log.debug("%s: %s", command[0], error)
        return -1
    return completed.returncode


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _in_root(root: str, program: str, arguments: Sequence[str]) -> list[str]:
    if os.path.normpath(root) == "/":
        return [program, *arguments]
    return ["chroot", root, program, *arguments]


@dataclass
class NvidiaSmiCheck:
    """The check above; `host_root` and `driver_root` are where those roots are mounted in this container."""

    host_root: str = "/host"
    driver_root: str = "/run/nvidia/driver"
    skip_gpu_init: bool = False
    run: Runner = field(default=run_quietly)

    @property
    def arguments(self) -> tuple[str, ...]:
        return ("--version",) if self.skip_gpu_init else ()

    def _wsl(self) -> bool:
        try:
            return os.path.getsize(_inside(self.host_root, WSL_SMI)) > 0
        except OSError:
            return False

    def _host_command(self) -> list[str] | None:
        for directory in HOST_SMI_DIRS:
            program = f"{directory}/{_SMI}"
            if os.path.isfile(_inside(self.host_root, program)):
                return _in_root(self.host_root, program, self.arguments)
        return None

    def _container_command(self) -> list[str] | None:
        if not os.path.isfile(_inside(self.driver_root, f"/usr/bin/{_SMI}")):
            return None
        return _in_root(self.driver_root, _SMI, self.arguments)

    def __call__(self) -> bool:
        if self._wsl():
            return True
        commands = [c for c in (self._host_command(), self._container_command()) if c is not None]
        if not commands:
            _log.debug("no nvidia-smi under %s or %s", self.host_root, self.driver_root)
        return any(self.run(command) == 0 for command in commands)
