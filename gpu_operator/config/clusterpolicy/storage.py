"""GPUDirect Storage (`gds`, the nvidia-fs module) and GDRCopy (`gdrcopy`): driver sidecars, off by default."""

from __future__ import annotations

from gpu_operator.config.clusterpolicy.common import ContainerOperandSpec

__all__ = ["GdsSpec", "GdrcopySpec"]


class GdsSpec(ContainerOperandSpec):
    """The `nvidia-fs-ctr` sidecar of the driver DaemonSet."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "nvidia-fs"
    version: str = "2.29.4"


class GdrcopySpec(ContainerOperandSpec):
    """The `nvidia-gdrcopy-ctr` sidecar of the driver DaemonSet."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "gdrdrv"
    version: str = "v2.6"
