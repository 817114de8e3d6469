"""Simulated identity, memory, fabric and NVLink calls: what a GPU is.

Names, UUIDs, serials, PCI ids and compute capability come straight from the profile; memory use is drawn
from the model's range (reserved memory reported apart with the v2 query, folded into "used" with v1); fabric
registration is filled into the ctypes structure the caller passes, as NVML does.
"""

from __future__ import annotations

from typing import Any

import pynvml

from gpu_operator.agents.nvml.discovery import BRANDS
from gpu_operator.agents.nvml.inventory import MIB, FabricState
from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail, mig_uuid
from gpu_operator.agents.nvml.simulated.records import (
    GpuHandle,
    MemoryRecord,
    MemoryV2Record,
    MigHandle,
    PciRecord,
)

__all__ = ["DeviceCalls"]

_BRAND_CODES = {name: code for code, name in BRANDS.items()}
_FABRIC_STATES = {
    "not-supported": FabricState.NOT_SUPPORTED,
    "not-started": FabricState.NOT_STARTED,
    "in-progress": FabricState.IN_PROGRESS,
    "completed": FabricState.COMPLETED,
}


class DeviceCalls(SimulatedCore):
    """nvmlDeviceGet{Count,HandleByIndex,UUID,Name,Brand,Serial,VbiosVersion,PciInfo,...}, memory, fabric, NVLink."""

    # -- identity -------------------------------------------------------------------------------------------

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self.profile.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> GpuHandle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self.profile.gpus):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return GpuHandle(index)

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        if isinstance(handle, MigHandle):
            _, gpu, _, placement = self._mig(handle, "nvmlDeviceGetUUID")
            return mig_uuid(gpu.uuid, placement.gpu_instance, placement.compute_instance)
        return self._gpu(handle, "nvmlDeviceGetUUID")[1].uuid

    def nvmlDeviceGetName(self, handle: Any) -> str:
        if isinstance(handle, MigHandle):
            _, _, model, placement = self._mig(handle, "nvmlDeviceGetName")
            return f"{model.name} MIG {placement.profile}"
        return self._gpu(handle, "nvmlDeviceGetName")[2].name

    def nvmlDeviceGetBrand(self, handle: Any) -> int:
        return _BRAND_CODES.get(self._gpu(handle, "nvmlDeviceGetBrand")[2].brand, pynvml.NVML_BRAND_UNKNOWN)

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        return self._gpu(handle, "nvmlDeviceGetSerial")[1].serial

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> str:
        version = self._gpu(handle, "nvmlDeviceGetVbiosVersion")[2].vbios_version
        return version if version is not None else fail(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetPciInfo(self, handle: Any) -> PciRecord:
        _, gpu, model = self._gpu(handle, "nvmlDeviceGetPciInfo")
        domain, bus, rest = gpu.bus_id.split(":")
        return PciRecord(
            busId=gpu.bus_id,
            domain=int(domain, 16),
            bus=int(bus, 16),
            device=int(rest.split(".")[0], 16),
            pciDeviceId=model.pci_device_id,
            pciSubSystemId=model.pci_subsystem_id,
        )

    def nvmlDeviceGetMinorNumber(self, handle: Any) -> int:
        return self._gpu(handle, "nvmlDeviceGetMinorNumber")[1].minor

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        return self._gpu(handle, "nvmlDeviceGetCudaComputeCapability")[2].compute_capability

    # -- memory ---------------------------------------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int | None = None) -> MemoryRecord | MemoryV2Record:
        if isinstance(handle, MigHandle):
            index, _, model, placement = self._mig(handle, "nvmlDeviceGetMemoryInfo")
            profile = model.mig_profile(placement.profile)
            assert profile is not None
            total_mib, reserved_mib = profile.memory_mib, 0
            key = f"mig{placement.gpu_instance}/memory_used"
            bounds = (0, min(model.telemetry.memory_used_mib[1], total_mib))
        else:
            index, _, model = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
            total_mib, reserved_mib = model.memory_mib, model.reserved_mib
            key, bounds = "memory_used", model.telemetry.memory_used_mib
        used = self._telemetry.gauge(index, key, bounds) * MIB
        total, reserved = total_mib * MIB, reserved_mib * MIB
        free = total - reserved - used
        if version is None:
            return MemoryRecord(total=total, free=free, used=used + reserved)
        return MemoryV2Record(total=total, reserved=reserved, free=free, used=used)

    # -- fabric and NVLink ----------------------------------------------------------------------------------

    def _fill_fabric(self, handle: Any, info: Any, name: str) -> int:
        _, _, model = self._gpu(handle, name)
        if model.fabric is None:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        target = getattr(info, "_obj", info)  # the adapter passes ctypes.byref(structure)
        for position, byte in enumerate(model.fabric.cluster_uuid.bytes):
            target.clusterUuid[position] = byte
        target.cliqueId = model.fabric.clique_id
        target.state = int(_FABRIC_STATES[model.fabric.state])
        target.status = model.fabric.status
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, info: Any) -> int:
        return self._fill_fabric(handle, info, "nvmlDeviceGetGpuFabricInfoV")

    def nvmlDeviceGetGpuFabricInfo(self, handle: Any, info: Any) -> int:
        return self._fill_fabric(handle, info, "nvmlDeviceGetGpuFabricInfo")

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:
        index, _, model = self._gpu(handle, "nvmlDeviceGetNvLinkState")
        if not 0 <= link < model.nvlinks:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        if link in self.injected(index).links_down:
            return pynvml.NVML_FEATURE_DISABLED
        return pynvml.NVML_FEATURE_ENABLED
