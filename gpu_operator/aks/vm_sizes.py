"""The catalog of Azure GPU VM sizes: what hardware an AKS node pool of each size brings.

A pool's VM size decides everything the GPU stack must know about its nodes before they exist: which GPU and how
many (the extended resources a node advertises), whether the GPU can be partitioned with MIG (so a MIG layout
is allowed and the MIG manager runs there), and whether the VM has InfiniBand (so the pool gets the RDMA wiring
and may need the `AKSInfinibandSupport` subscription feature). InfiniBand on these sizes is one SR-IOV virtual
function per GPU; its PCI device id (`101c` for ConnectX-6 HDR, `101e` for the ConnectX-7 NDR generation) is
what Node Feature Discovery matches to label IB nodes.

This module is data only. Sizes missing here can still be used by declaring their GPU facts on the pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping

from gpu_operator.mig.catalog import NVIDIA_VENDOR_ID, GpuModel, model_by_pci_id

__all__ = [
    "CONNECTX6_VF",
    "CONNECTX7_VF",
    "Gpu",
    "Infiniband",
    "GpuHardware",
    "GpuVmSize",
    "VM_SIZES",
    "vm_size",
]

#: ConnectX-6 virtual function (HDR InfiniBand; ND A100 v4, NDm A100 v4).
CONNECTX6_VF = "101c"
#: ConnectX family mlx5Gen virtual function (used by ConnectX-7 NDR; ND H100 v5, ND H200 v5).
CONNECTX7_VF = "101e"


@dataclass(frozen=True)
class Gpu:
    """One GPU model: its name, memory, PCI device id (vendor 0x10DE; None when unknown) and MIG capability."""

    model: str
    memory_gib: int
    device_id: int | None
    mig_capable: bool

    @property
    def mig_model(self) -> GpuModel | None:
        """The MIG catalog's entry for this GPU (its MIG profiles), when its PCI id is known there."""
        if self.device_id is None:
            return None
        return model_by_pci_id(f"0x{self.device_id:04X}{NVIDIA_VENDOR_ID:04X}")


@dataclass(frozen=True)
class Infiniband:
    """The InfiniBand NICs of one VM: how many, the link rate of each, and the PCI id of their VFs."""

    nics: int
    rate_gbps: int
    vf_device_id: str


@dataclass(frozen=True)
class GpuHardware:
    """The GPUs of one VM, and its InfiniBand NICs if it has any."""

    gpu: Gpu
    gpu_count: int
    infiniband: Infiniband | None = None


@dataclass(frozen=True)
class GpuVmSize:
    """One Azure VM size (`Standard_ND96isr_H100_v5`), the family it belongs to, and its hardware."""

    name: str
    family: str
    hardware: GpuHardware


A100_SXM4_40GB = Gpu("A100-SXM4-40GB", memory_gib=40, device_id=0x20B0, mig_capable=True)
A100_SXM4_80GB = Gpu("A100-SXM4-80GB", memory_gib=80, device_id=0x20B2, mig_capable=True)
A100_PCIE_80GB = Gpu("A100-PCIE-80GB", memory_gib=80, device_id=0x20B5, mig_capable=True)
H100_SXM5_80GB = Gpu("H100-SXM5-80GB", memory_gib=80, device_id=0x2330, mig_capable=True)
H100_NVL = Gpu("H100 NVL", memory_gib=94, device_id=0x2321, mig_capable=True)
H200_141GB = Gpu("H200-141GB", memory_gib=141, device_id=0x2335, mig_capable=True)
TESLA_T4 = Gpu("Tesla T4", memory_gib=16, device_id=0x1EB8, mig_capable=False)

_HDR_8X = Infiniband(nics=8, rate_gbps=200, vf_device_id=CONNECTX6_VF)
_NDR_8X = Infiniband(nics=8, rate_gbps=400, vf_device_id=CONNECTX7_VF)

_SIZES: tuple[GpuVmSize, ...] = (
    GpuVmSize("Standard_ND96asr_v4", "ND A100 v4", GpuHardware(A100_SXM4_40GB, 8, _HDR_8X)),
    GpuVmSize("Standard_ND96amsr_A100_v4", "NDm A100 v4", GpuHardware(A100_SXM4_80GB, 8, _HDR_8X)),
    GpuVmSize("Standard_ND96isr_H100_v5", "ND H100 v5", GpuHardware(H100_SXM5_80GB, 8, _NDR_8X)),
    GpuVmSize("Standard_ND96isr_H200_v5", "ND H200 v5", GpuHardware(H200_141GB, 8, _NDR_8X)),
    GpuVmSize("Standard_NC24ads_A100_v4", "NC A100 v4", GpuHardware(A100_PCIE_80GB, 1)),
    GpuVmSize("Standard_NC48ads_A100_v4", "NC A100 v4", GpuHardware(A100_PCIE_80GB, 2)),
    GpuVmSize("Standard_NC96ads_A100_v4", "NC A100 v4", GpuHardware(A100_PCIE_80GB, 4)),
    GpuVmSize("Standard_NC40ads_H100_v5", "NC H100 v5", GpuHardware(H100_NVL, 1)),
    GpuVmSize("Standard_NC80adis_H100_v5", "NC H100 v5", GpuHardware(H100_NVL, 2)),
    GpuVmSize("Standard_NC4as_T4_v3", "NCas T4 v3", GpuHardware(TESLA_T4, 1)),
    GpuVmSize("Standard_NC8as_T4_v3", "NCas T4 v3", GpuHardware(TESLA_T4, 1)),
    GpuVmSize("Standard_NC16as_T4_v3", "NCas T4 v3", GpuHardware(TESLA_T4, 1)),
    GpuVmSize("Standard_NC64as_T4_v3", "NCas T4 v3", GpuHardware(TESLA_T4, 4)),
)

#: Every size we know, by name as Azure spells it.
VM_SIZES: Mapping[str, GpuVmSize] = MappingProxyType({size.name: size for size in _SIZES})
_BY_LOWER_NAME = {name.lower(): size for name, size in VM_SIZES.items()}


def vm_size(name: str) -> GpuVmSize | None:
    """The catalog entry for a VM size, matched case-insensitively as Azure does; None when unknown."""
    return _BY_LOWER_NAME.get(name.lower())
