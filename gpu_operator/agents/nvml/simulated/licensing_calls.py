"""Simulated vGPU licensing: `nvmlDeviceGetGridLicensableFeatures`.

A node whose profile names a vGPU host (`vgpuHost`) has vGPU guest GPUs: licensing applies and the vGPU feature
is licensed. On every other node licensing is not supported, as on bare-metal data-centre GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pynvml

from gpu_operator.agents.nvml.simulated.core import SimulatedCore

__all__ = ["LicensableFeatureRecord", "LicensableFeaturesRecord", "LicensingCalls"]

#: nvmlGridLicensableFeature_t.featureState of a licensed feature.
LICENSED = 1


@dataclass(frozen=True, slots=True)
class LicensableFeatureRecord:
    featureCode: int
    featureState: int


@dataclass(frozen=True, slots=True)
class LicensableFeaturesRecord:
    isGridLicenseSupported: int
    licensableFeaturesCount: int
    gridLicensableFeatures: tuple[LicensableFeatureRecord, ...]


class LicensingCalls(SimulatedCore):
    """nvmlDeviceGetGridLicensableFeatures."""

    def nvmlDeviceGetGridLicensableFeatures(self, handle: Any) -> LicensableFeaturesRecord:
        self._gpu(handle, "nvmlDeviceGetGridLicensableFeatures")
        if self.profile.vgpu_host is None:
            return LicensableFeaturesRecord(0, 0, ())
        vgpu = LicensableFeatureRecord(pynvml.NVML_GRID_LICENSE_FEATURE_CODE_VGPU, LICENSED)
        return LicensableFeaturesRecord(1, 1, (vgpu,))
