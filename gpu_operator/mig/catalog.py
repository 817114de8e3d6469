"""The MIG catalog: which NVIDIA GPUs can be partitioned, and into which MIG profiles.

A GPU model is identified the way mig-parted's `device-filter` identifies it: its PCI device id followed by
NVIDIA's vendor id (`0x233010DE` is device 0x2330, an H100 SXM5 80GB). Models that share a memory size and
compute layout share one :class:`MigGeometry`: the MIG profiles the driver offers (go-nvlib names such as
`1g.10gb`, `1g.10gb+me`, `1g.24gb+gfx`, `1g.24gb-me`), how many instances of each fit on one GPU, and
NVIDIA's "balanced" mix of small, medium and large instances.

This module is data only: the default mig-parted config (:mod:`gpu_operator.mig.default_config`) and the MIG
manager agent both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from collections.abc import Mapping

from gpu_operator.mig.matching import normal_pci_id

__all__ = [
    "NVIDIA_VENDOR_ID",
    "MigGeometry",
    "GpuModel",
    "GEOMETRIES",
    "GPU_MODELS",
    "LEGACY_PROFILES",
    "model_by_pci_id",
]

NVIDIA_VENDOR_ID = 0x10DE


@dataclass(frozen=True, eq=False)
class MigGeometry:
    """The MIG profiles of one GPU memory configuration.

    `profiles` maps each profile to the most instances of it one GPU holds; `balanced` is the mix NVIDIA's
    `all-balanced` config creates (empty when NVIDIA defines none).
    """

    name: str
    profiles: Mapping[str, int]
    balanced: Mapping[str, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", MappingProxyType(dict(self.profiles)))
        object.__setattr__(self, "balanced", MappingProxyType(dict(self.balanced)))


@dataclass(frozen=True)
class GpuModel:
    """One MIG-capable GPU model: its name, PCI device id and geometry."""

    name: str
    device_id: int
    geometry: MigGeometry

    @property
    def pci_id(self) -> str:
        """The id mig-parted matches in `device-filter`: `0x<device><vendor>` in upper-case hex."""
        return f"0x{self.device_id:04X}{NVIDIA_VENDOR_ID:04X}"


A100_40GB = MigGeometry(
    "A100-40GB",
    profiles={"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    balanced={"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
)
GPU_80GB = MigGeometry(
    "80GB (A100, A800, H100, H800)",
    profiles={"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    balanced={"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
)
A30_24GB = MigGeometry(
    "A30-24GB",
    profiles={"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
    balanced={"1g.6gb": 2, "2g.12gb": 1},
)
H100_94GB = MigGeometry(
    "94GB (H100 NVL, H800 NVL)",
    profiles={"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1},
    balanced={"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
)
GPU_96GB = MigGeometry(
    "96GB (H100-96GB, GH200, H20, PG506)",
    profiles={"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
    balanced={"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
)
H200_141GB = MigGeometry(
    "H200-141GB",
    profiles={"1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    balanced={"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
)
GH200_144GB = MigGeometry(
    "GH200 144G HBM3e",
    profiles={"1g.18gb": 7, "1g.18gb+me": 1, "1g.36gb": 4, "2g.36gb": 3, "3g.72gb": 2, "4g.72gb": 1, "7g.144gb": 1},
    balanced={"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
)
B200_180GB = MigGeometry(
    "B200-180GB",
    profiles={"1g.23gb": 7, "1g.23gb+me": 1, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
    balanced={"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
)
GB200_186GB = MigGeometry(
    "GB200-186GB",
    profiles={"1g.23gb": 7, "1g.23gb+me": 1, "1g.47gb": 4, "2g.47gb": 3, "3g.93gb": 2, "4g.93gb": 1, "7g.186gb": 1},
    balanced={"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1},
)
B300_269GB = MigGeometry(
    "B300-269GB",
    profiles={
        "1g.34gb": 7, "1g.34gb+me": 1, "1g.67gb": 4, "2g.67gb": 3, "3g.135gb": 2, "4g.135gb": 1, "7g.269gb": 1,
    },
    balanced={"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1},
)
GB300_278GB = MigGeometry(
    "GB300-278GB",
    profiles={
        "1g.35gb": 7, "1g.35gb+me": 1, "1g.70gb": 4, "2g.70gb": 3, "3g.139gb": 2, "4g.139gb": 1, "7g.278gb": 1,
    },
    balanced={"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1},
)
RTX_PRO_6000_96GB = MigGeometry(
    "RTX PRO 6000 Blackwell 96GB",
    profiles={
        "1g.24gb": 4, "1g.24gb+gfx": 4, "1g.24gb+me.all": 1, "1g.24gb-me": 4,
        "2g.48gb": 2, "2g.48gb+gfx": 2, "2g.48gb+me.all": 1, "2g.48gb-me": 2,
        "4g.96gb": 1, "4g.96gb+gfx": 1,
    },
    balanced={"1g.24gb": 2, "2g.48gb": 1},
)

GEOMETRIES: tuple[MigGeometry, ...] = (
    A100_40GB, GPU_80GB, A30_24GB, H100_94GB, GPU_96GB, H200_141GB, GH200_144GB,
    B200_180GB, GB200_186GB, B300_269GB, GB300_278GB, RTX_PRO_6000_96GB,
)

#: Every MIG-capable model we know, grouped by geometry.
GPU_MODELS: tuple[GpuModel, ...] = (
    GpuModel("A100-SXM4-40GB", 0x20B0, A100_40GB),
    GpuModel("A100-PCIE-40GB", 0x20B1, A100_40GB),
    GpuModel("A100-PCIE-40GB (device 20F1)", 0x20F1, A100_40GB),
    GpuModel("A800-PCIE-40GB", 0x20F6, A100_40GB),
    GpuModel("H100-SXM5-80GB", 0x2330, GPU_80GB),
    GpuModel("H100-PCIE-80GB", 0x2331, GPU_80GB),
    GpuModel("H800-PCIE-80GB", 0x2322, GPU_80GB),
    GpuModel("H800-SXM5-80GB", 0x2324, GPU_80GB),
    GpuModel("A100-SXM4-80GB", 0x20B2, GPU_80GB),
    GpuModel("A100-PCIE-80GB", 0x20B5, GPU_80GB),
    GpuModel("A800-SXM4-80GB", 0x20F3, GPU_80GB),
    GpuModel("A800-PCIE-80GB", 0x20F5, GPU_80GB),
    GpuModel("A30-24GB", 0x20B7, A30_24GB),
    GpuModel("H100 NVL", 0x2321, H100_94GB),
    GpuModel("H800 NVL", 0x233A, H100_94GB),
    GpuModel("GH200 96GB", 0x2342, GPU_96GB),
    GpuModel("H100-96GB", 0x233D, GPU_96GB),
    GpuModel("PG506-96GB", 0x20B6, GPU_96GB),
    GpuModel("H20", 0x2329, GPU_96GB),
    GpuModel("H200-141GB", 0x2335, H200_141GB),
    GpuModel("H200 NVL", 0x233B, H200_141GB),
    GpuModel("GH200 144G HBM3e", 0x2348, GH200_144GB),
    GpuModel("B200", 0x2901, B200_180GB),
    GpuModel("GB200 HGX", 0x2941, GB200_186GB),
    GpuModel("B300", 0x3182, B300_269GB),
    GpuModel("GB300", 0x31C2, GB300_278GB),
    GpuModel("RTX PRO 6000 Blackwell Server Edition", 0x2BB5, RTX_PRO_6000_96GB),
)

#: Profile names of early GB200 boards (1g.24gb+me, 3g.95gb, ...) that NVIDIA's default config still offers
#: as `all-<profile>` so existing node labels keep resolving; no current model reports them.
LEGACY_PROFILES: Mapping[str, int] = MappingProxyType({"1g.24gb+me": 1, "3g.95gb": 2, "4g.95gb": 1, "7g.189gb": 1})


def model_by_pci_id(pci_id: str) -> GpuModel | None:
    """The catalog model with this `0x<device><vendor>` id (any case), or None."""
    wanted = normal_pci_id(pci_id)
    return next((model for model in GPU_MODELS if model.pci_id == wanted), None)
