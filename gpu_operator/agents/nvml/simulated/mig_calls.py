"""Simulated MIG calls: MIG mode, MIG devices, and GPU/compute instances with their profiles.

A MIG-enabled GPU of the profile has MIG devices at the placements its layout lists. Each answers with its
GPU instance id, compute instance id and attributes derived from the model's GPU instance profile table; the
profile id/index lookups the adapter makes to name a MIG profile are answered from the same table. Compute
instance profile ids equal their indices, as on NVIDIA's GPUs.
"""

from __future__ import annotations

from typing import Any

import pynvml

from gpu_operator.agents.nvml.mig_profile import COMPUTE_INSTANCE_SLICES
from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail
from gpu_operator.agents.nvml.simulated.records import (
    AttributesRecord,
    ComputeInstanceHandle,
    ComputeInstanceProfileRecord,
    ComputeInstanceRecord,
    GpuHandle,
    GpuInstanceHandle,
    GpuInstanceProfileRecord,
    GpuInstanceRecord,
    MigHandle,
)

__all__ = ["MigCalls"]

#: Compute instance slices -> compute instance profile index (the standard profiles only).
_CI_INDEX = {slices: index for index, slices in COMPUTE_INSTANCE_SLICES.items() if index < 7}


class MigCalls(SimulatedCore):
    """nvmlDeviceGetMigMode, MIG device handles and attributes, GPU and compute instance queries."""

    # -- MIG ------------------------------------------------------------------------------------------------

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        _, gpu, _ = self._mig_capable(handle, "nvmlDeviceGetMigMode")
        if gpu.mig is None:
            return [pynvml.NVML_DEVICE_MIG_DISABLE, pynvml.NVML_DEVICE_MIG_DISABLE]
        return [int(gpu.mig.current), int(gpu.mig.pending_mode)]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int:
        return self._mig_capable(handle, "nvmlDeviceGetMaxMigDeviceCount")[2].max_mig_devices

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: int) -> MigHandle:
        gpu_index, gpu, _ = self._mig_capable(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        if gpu.mig is None or not gpu.mig.current:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if not 0 <= index < len(gpu.mig.devices):
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        return MigHandle(gpu_index, index)

    def nvmlDeviceGetGpuInstanceId(self, handle: Any) -> int:
        return self._mig(handle, "nvmlDeviceGetGpuInstanceId")[3].gpu_instance

    def nvmlDeviceGetComputeInstanceId(self, handle: Any) -> int:
        return self._mig(handle, "nvmlDeviceGetComputeInstanceId")[3].compute_instance

    def nvmlDeviceGetAttributes(self, handle: Any) -> AttributesRecord:
        _, _, model, placement = self._mig(handle, "nvmlDeviceGetAttributes")
        profile, ci_slices = self._compute_slices(model, placement)
        return AttributesRecord(
            multiprocessorCount=profile.multiprocessors * ci_slices // profile.slices,
            sharedCopyEngineCount=profile.copy_engines,
            sharedDecoderCount=profile.decoders,
            sharedEncoderCount=profile.encoders,
            sharedJpegCount=profile.jpegs,
            sharedOfaCount=profile.ofas,
            gpuInstanceSliceCount=profile.slices,
            computeInstanceSliceCount=ci_slices,
            memorySizeMB=profile.memory_mib,
        )

    def nvmlDeviceGetGpuInstanceById(self, handle: Any, gpu_instance_id: int) -> GpuInstanceHandle:
        index, gpu, _ = self._mig_capable(handle, "nvmlDeviceGetGpuInstanceById")
        self._monitor_permitted(index)
        if not any(p.gpu_instance == gpu_instance_id for p in self._placements(gpu)):
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        return GpuInstanceHandle(index, gpu_instance_id)

    def nvmlGpuInstanceGetInfo(self, gpu_instance: Any) -> GpuInstanceRecord:
        index, model, placement = self._instance(gpu_instance, "nvmlGpuInstanceGetInfo")
        profile, _ = self._compute_slices(model, placement)
        return GpuInstanceRecord(device=GpuHandle(index), id=placement.gpu_instance, profileId=profile.id)

    def nvmlDeviceGetGpuInstanceProfileInfo(
        self, handle: Any, profile: int, version: int = 2
    ) -> GpuInstanceProfileRecord:
        _, _, model = self._mig_capable(handle, "nvmlDeviceGetGpuInstanceProfileInfo")
        match = next((p for p in model.mig_profiles if p.index == profile), None)
        if match is None:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return GpuInstanceProfileRecord(
            id=match.id,
            isP2pSupported=0,
            sliceCount=match.slices,
            instanceCount=match.instances,
            multiprocessorCount=match.multiprocessors,
            copyEngineCount=match.copy_engines,
            decoderCount=match.decoders,
            encoderCount=match.encoders,
            jpegCount=match.jpegs,
            ofaCount=match.ofas,
            memorySizeMB=match.memory_mib,
            name=f"MIG {match.name}",
        )

    def nvmlGpuInstanceGetComputeInstanceById(
        self, gpu_instance: Any, compute_instance_id: int
    ) -> ComputeInstanceHandle:
        index, _, _ = self._instance(gpu_instance, "nvmlGpuInstanceGetComputeInstanceById")
        placements = self._placements(self.profile.gpus[index])
        if not any(
            p.gpu_instance == gpu_instance.gpu_instance and p.compute_instance == compute_instance_id
            for p in placements
        ):
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        return ComputeInstanceHandle(index, gpu_instance.gpu_instance, compute_instance_id)

    def nvmlComputeInstanceGetInfo(self, compute_instance: Any) -> ComputeInstanceRecord:
        index, model, _ = self._instance(compute_instance, "nvmlComputeInstanceGetInfo")
        gpu = self.profile.gpus[index]
        placement = next(
            p
            for p in self._placements(gpu)
            if p.gpu_instance == compute_instance.gpu_instance
            and p.compute_instance == compute_instance.compute_instance
        )
        _, ci_slices = self._compute_slices(model, placement)
        return ComputeInstanceRecord(
            device=GpuHandle(index),
            gpuInstance=GpuInstanceHandle(index, placement.gpu_instance),
            id=placement.compute_instance,
            profileId=_CI_INDEX[ci_slices] if placement.compute_profile is None else placement.compute_profile,
        )

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, gpu_instance: Any, profile: int, eng_profile: int, version: int = 2
    ) -> ComputeInstanceProfileRecord:
        _, model, placement = self._instance(gpu_instance, "nvmlGpuInstanceGetComputeInstanceProfileInfo")
        gi_profile, _ = self._compute_slices(model, placement)
        slices = COMPUTE_INSTANCE_SLICES.get(profile)
        offered = {*_CI_INDEX.values(), *self._special_compute_profiles(gpu_instance)}
        if eng_profile != pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED or profile not in offered:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if slices is None:
            slices = self._special_compute_profiles(gpu_instance).get(profile)
        if slices is None or slices > gi_profile.slices:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return ComputeInstanceProfileRecord(
            id=profile,
            sliceCount=slices,
            instanceCount=gi_profile.slices // slices,
            multiprocessorCount=gi_profile.multiprocessors * slices // gi_profile.slices,
            sharedCopyEngineCount=gi_profile.copy_engines,
            sharedDecoderCount=gi_profile.decoders,
            sharedEncoderCount=gi_profile.encoders,
            sharedJpegCount=gi_profile.jpegs,
            sharedOfaCount=gi_profile.ofas,
            name=f"MIG {slices}c.{gi_profile.name}" if slices != gi_profile.slices else f"MIG {gi_profile.name}",
        )

    def _special_compute_profiles(self, gpu_instance: Any) -> dict[int, int]:
        """Non-standard compute instance profile index -> slices, as the placements of this GPU instance use them."""
        placements = self._placements(self.profile.gpus[gpu_instance.gpu])
        return {
            p.compute_profile: p.compute_slices or self._compute_slices(self.profile.model_of(gpu_instance.gpu), p)[1]
            for p in placements
            if p.gpu_instance == gpu_instance.gpu_instance and p.compute_profile is not None
        }
