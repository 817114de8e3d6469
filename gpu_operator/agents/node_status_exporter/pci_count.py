"""How many NVIDIA PCI devices the node has, for `gpu_operator_nvidia_pci_devices_total`.

The validator counts the lines of `lspci` that mention "nvidia" (in any case) - every NVIDIA function: GPUs,
their audio functions, NVSwitches - and reports -1 when `lspci` fails. Where `lspci` is not installed, the same
functions are counted from sysfs: the devices whose vendor is NVIDIA's (0x10de), which is what `lspci` names
"NVIDIA Corporation".
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

__all__ = ["FAILED", "LspciCounter", "PciCounter", "SysfsCounter", "count_nvidia_lines", "default_counter"]

#: The gauge's value when the devices cannot be counted.
FAILED = -1
_NVIDIA = "nvidia"
_NVIDIA_VENDOR = "0x10de"
_TIMEOUT_SECONDS = 30


class PciCounter(Protocol):
    """The number of NVIDIA PCI devices, or FAILED."""

    def __call__(self) -> int: ...


def count_nvidia_lines(lspci_output: str) -> int:
    return sum(1 for line in lspci_output.split("\n") if _NVIDIA in line.lower())


class LspciCounter:
    """Counts `lspci` lines mentioning NVIDIA; FAILED when lspci cannot run or fails."""

    def __init__(self, program: str = "lspci") -> None:
        self._program = program

    def __call__(self) -> int:
        try:
            completed = subprocess.run(
                [self._program], capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return FAILED
        return count_nvidia_lines(completed.stdout) if completed.returncode == 0 else FAILED


class SysfsCounter:
    """Counts PCI functions with NVIDIA's vendor id under `<sysfs>/bus/pci/devices`; FAILED if unreadable."""

    def __init__(self, sysfs_root: str = "/sys") -> None:
        self._devices = Path(sysfs_root) / "bus" / "pci" / "devices"

    def __call__(self) -> int:
        try:
            return sum(1 for d in self._devices.iterdir() if (d / "vendor").read_text().strip() == _NVIDIA_VENDOR)
        except OSError:
            return FAILED


def default_counter(sysfs_root: str = "/sys", which: Callable[[str], str | None] = shutil.which) -> PciCounter:
    """`lspci` when installed, else sysfs."""
    program = which("lspci")
    return LspciCounter(program) if program else SysfsCounter(sysfs_root)
