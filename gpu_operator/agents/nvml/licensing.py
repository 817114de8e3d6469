"""The vGPU software licence state of a GPU, as DCGM reports it in `DCGM_FI_DEV_VGPU_LICENSE_STATUS`.

`nvmlDeviceGetGridLicensableFeatures` says whether the GPU takes a vGPU licence at all and, per licensable
feature, its state. The status is 1 when licensing is supported and some feature is in a licensed state
(state > 0), else 0 - so a bare-metal data-centre GPU, where licensing does not apply, reports 0.
"""

from __future__ import annotations

from typing import Any, Protocol

from gpu_operator.agents.nvml.errors import NvmlError, NvmlNotSupported
from gpu_operator.agents.nvml.library import Handle
from gpu_operator.agents.nvml.reading import call

__all__ = ["LicenseReader", "LicensingLibrary", "status_of", "vgpu_license_status"]


class LicensingLibrary(Protocol):
    def nvmlDeviceGetGridLicensableFeatures(self, handle: Handle) -> Any: ...


def status_of(features: Any) -> int:
    """0 or 1 from nvmlDeviceGetGridLicensableFeatures' structure."""
    if not int(features.isGridLicenseSupported):
        return 0
    count = int(features.licensableFeaturesCount)
    states = (int(features.gridLicensableFeatures[i].featureState) for i in range(count))
    return 1 if any(state > 0 for state in states) else 0


def vgpu_license_status(lib: LicensingLibrary, handle: Handle) -> int:
    """The licence status of one GPU; 0 where NVML does not support licensing. A lost GPU raises NvmlGpuLost."""
    try:
        return status_of(call(lambda: lib.nvmlDeviceGetGridLicensableFeatures(handle)))
    except NvmlNotSupported:
        return 0


class LicenseReader:
    """The licence status of GPUs by NVML index, with the device handles looked up once."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        self._handles: dict[int, Handle] = {}

    def status(self, index: int) -> int | None:
        """0 or 1; None when the GPU cannot be asked (lost, or no handle)."""
        try:
            handle = self._handles.get(index)
            if handle is None:
                handle = self._handles[index] = call(lambda: self._lib.nvmlDeviceGetHandleByIndex(index))
            return vgpu_license_status(self._lib, handle)
        except NvmlError:
            return None
