"""The PCI side of the GPUs: what sysfs knows that NVML does not.

Some facts the agents need live in the kernel's view of the PCI functions, not in NVML: the PCI class
(`0x030200` 3D controller = compute mode, `0x030000` VGA = graphics mode), the NUMA node, and the config space,
whose NVIDIA vendor capability tells a vGPU guest which host driver it runs on. `PciBus` is that view; the
real one reads `<sysfs>/bus/pci/devices`, a simulated node answers from its profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["PciFunction", "PciBus", "SysfsPciBus", "NVIDIA_VENDOR_ID", "sysfs_address"]

#: The vendor id sysfs shows for NVIDIA functions.
NVIDIA_VENDOR_ID = "0x10de"


def sysfs_address(bus_id: str) -> str:
    """NVML's bus id (`00000000:3B:00.0`) as a sysfs directory name (`0000:3b:00.0`)."""
    text = bus_id.lower()
    return text[4:] if text.startswith("0000") and len(text.split(":", 1)[0]) == 8 else text


@dataclass(frozen=True, slots=True)
class PciFunction:
    """One NVIDIA PCI function: its sysfs address, class and raw config space."""

    address: str
    device_class: str
    config: bytes


class PciBus(Protocol):
    """The PCI facts of the node the NVML layer describes."""

    def device_class(self, bus_id: str) -> str | None:
        """The PCI class of a GPU (`0x030200`), or None when it cannot be read."""
        ...

    def numa_node(self, bus_id: str) -> int | None:
        """The NUMA node of a GPU, or None when the platform has none (sysfs says -1) or it cannot be read."""
        ...

    def nvidia_functions(self) -> tuple[PciFunction, ...]:
        """Every NVIDIA PCI function with its config space. Raises OSError when the bus cannot be scanned."""
        ...


class SysfsPciBus:
    """`PciBus` over a sysfs tree (normally `/sys`; the root is a parameter so tests can build one)."""

    def __init__(self, sysfs_root: str | Path = "/sys") -> None:
        self._devices = Path(sysfs_root) / "bus" / "pci" / "devices"

    def _read(self, bus_id: str, name: str) -> str | None:
        try:
            return (self._devices / sysfs_address(bus_id) / name).read_text().strip()
        except OSError:
            return None

    def device_class(self, bus_id: str) -> str | None:
        return self._read(bus_id, "class")

    def numa_node(self, bus_id: str) -> int | None:
        text = self._read(bus_id, "numa_node")
        if text is None:
            return None
        try:
            node = int(text)
        except ValueError:
            return None
        return node if node >= 0 else None

    def nvidia_functions(self) -> tuple[PciFunction, ...]:
        functions = []
        for entry in sorted(self._devices.iterdir()):
            if (entry / "vendor").read_text().strip() != NVIDIA_VENDOR_ID:
                continue
            device_class = (entry / "class").read_text().strip()
            functions.append(PciFunction(entry.name, device_class, (entry / "config").read_bytes()))
        return tuple(functions)
