"""Where the NVIDIA driver is installed on this node, and what `driver-ready` tells the other operands.

The driver is either the host's own (`nvidia-smi` in one of the usual places under the host root) or the one
the driver container installs under `DRIVER_INSTALL_DIR` (`/run/nvidia/driver`). `driver-ready` records which,
as five `KEY=value` lines the toolkit, device plugin and MIG manager entrypoints source:

* `IS_HOST_DRIVER` - `true` or `false`;
* `NVIDIA_DRIVER_ROOT` / `DRIVER_ROOT_CTR_PATH` - the driver root on the host, and where those containers mount
  it (`/host` for the host's root, `/driver-root` for the containerized driver);
* `NVIDIA_DEV_ROOT` / `DEV_ROOT_CTR_PATH` - the root whose `/dev` holds the NVIDIA device nodes: the driver
  install dir when it has a `dev` directory of its own, else the host's root.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from gpu_operator.agents.nvml.loader import resolve_in_root

__all__ = [
    "DRIVER_ROOT_CTR_PATH",
    "HOST_CTR_PATH",
    "NVIDIA_SMI_PATHS",
    "WSL_NVIDIA_SMI",
    "DriverInfo",
    "container_driver_info",
    "driver_ready_text",
    "find_host_nvidia_smi",
    "host_driver_info",
    "is_wsl",
]

#: Where the consuming containers mount the host's root and the containerized driver's root.
HOST_CTR_PATH = "/host"
DRIVER_ROOT_CTR_PATH = "/driver-root"
#: nvidia-smi on WSL2, where the driver always comes from Windows.
WSL_NVIDIA_SMI = "/usr/lib/wsl/lib/nvidia-smi"
#: Where a host-installed driver's nvidia-smi is looked for (paths on the host).
NVIDIA_SMI_PATHS: tuple[str, ...] = (
    "/usr/bin/nvidia-smi",
    "/usr/sbin/nvidia-smi",
    "/bin/nvidia-smi",
    "/sbin/nvidia-smi",
    WSL_NVIDIA_SMI,
    "/opt/bin/nvidia-smi",
)


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """A validated driver installation, with host paths and the consumers' container paths."""

    is_host_driver: bool
    driver_root: str
    driver_root_ctr_path: str
    dev_root: str
    dev_root_ctr_path: str


def host_driver_info(host_root: str) -> DriverInfo:
    return DriverInfo(True, host_root, HOST_CTR_PATH, host_root, HOST_CTR_PATH)


def container_driver_info(host_root: str, install_dir: str, install_dir_in_container: str) -> DriverInfo:
    """The containerized driver; its dev root is the install dir only if that has its own `dev` directory."""
    has_dev = Path(install_dir_in_container, "dev").is_dir()
    dev_root, dev_ctr = (install_dir, DRIVER_ROOT_CTR_PATH) if has_dev else (host_root, HOST_CTR_PATH)
    return DriverInfo(False, install_dir, DRIVER_ROOT_CTR_PATH, dev_root, dev_ctr)


def driver_ready_text(info: DriverInfo) -> str:
    """The content of `driver-ready`."""
    return (
        f"IS_HOST_DRIVER={'true' if info.is_host_driver else 'false'}\n"
        f"NVIDIA_DRIVER_ROOT={info.driver_root}\n"
        f"DRIVER_ROOT_CTR_PATH={info.driver_root_ctr_path}\n"
        f"NVIDIA_DEV_ROOT={info.dev_root}\n"
        f"DEV_ROOT_CTR_PATH={info.dev_root_ctr_path}\n"
    )


def _inside(root: str, path: str) -> Path:
    return Path(root) / path.lstrip("/")


def _usable_executable(root: str, candidate: str) -> bool:
    """A regular, non-empty, executable file, its symlinks followed inside the root (as seen from the host)."""
    resolved = resolve_in_root(root, str(_inside(root, candidate)))
    if resolved is None:
        return False
    try:
        status = os.stat(resolved)
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode) and status.st_size > 0 and bool(status.st_mode & 0o111)


def find_host_nvidia_smi(host_root_in_container: str) -> str | None:
    """The host path of the host's nvidia-smi, or None when the host has no driver installed."""
    return next((c for c in NVIDIA_SMI_PATHS if _usable_executable(host_root_in_container, c)), None)


def is_wsl(host_root_in_container: str) -> bool:
    """WSL2: Windows provides the driver (nvidia-smi present and non-empty in the WSL library directory)."""
    path = _inside(host_root_in_container, WSL_NVIDIA_SMI)
    try:
        return path.lstat().st_size != 0
    except OSError:
        return False
