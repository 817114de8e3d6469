"""Which NVIDIA kernel modules a GPU can run: the open ones from Turing on, and only the open ones on Blackwell and
Grace Hopper.

NVIDIA's open GPU kernel modules "can be used on any Turing or later GPU" (NVIDIA/open-gpu-kernel-modules
README.md, "Compatible GPUs", 595.45.04): every PCI device id in its table is 0x1E02 (TITAN RTX) or later, and
Pascal and Volta (GV100 is 0x1DB1-0x1DBA) are below 0x1E00, so they need the proprietary modules. From Blackwell on
(B200 0x2901, GB200 0x2941, the GB20x parts from 0x2B85, B300/GB300 0x31xx; every Ada Lovelace id is below 0x2900)
and on Grace Hopper (GH200 0x2342, 0x2348) the driver supports only the open modules (NVIDIA driver README,
"Open Linux Kernel Modules": "the proprietary kernel modules are not supported" there). Device ids are the
`vendor 10de` ids GFD and NFD read, as `pools[].gpu.pciDeviceId` and the VM size catalog spell them.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["FIRST_OPEN_CAPABLE_DEVICE", "FIRST_OPEN_ONLY_DEVICE", "OPEN_ONLY_DEVICES", "ModuleSupport", "module_support"]

#: The lowest device id the open modules support (Turing TU102, 0x1E02, and everything after it).
FIRST_OPEN_CAPABLE_DEVICE = 0x1E00
#: The lowest Blackwell device id (GB100: B200 0x2901); every later generation runs the open modules only.
FIRST_OPEN_ONLY_DEVICE = 0x2900
#: Grace Hopper superchips (GH200 120GB/480GB 0x2342, GH200 144G HBM3e 0x2348): open modules only.
OPEN_ONLY_DEVICES = frozenset({0x2342, 0x2348})

ModuleSupport = Literal["proprietary-only", "both", "open-only"]


def module_support(device_id: int) -> ModuleSupport:
    """Which kernel module types the GPU with this PCI device id runs."""
    if device_id >= FIRST_OPEN_ONLY_DEVICE or device_id in OPEN_ONLY_DEVICES:
        return "open-only"
    if device_id < FIRST_OPEN_CAPABLE_DEVICE:
        return "proprietary-only"
    return "both"
