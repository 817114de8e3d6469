"""Handles and result records of the simulated NVML library.

Handles identify what a call is about (a GPU, a MIG device, a GPU or compute instance, an event set). Result
records carry the attribute names of pynvml's ctypes structures (`busId`, `pciDeviceId`, `profileId`,
`memorySizeMB`, ...), so code reading real NVML results reads these unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "GpuHandle",
    "MigHandle",
    "GpuInstanceHandle",
    "ComputeInstanceHandle",
    "EventSetHandle",
    "PciRecord",
    "MemoryRecord",
    "MemoryV2Record",
    "UtilizationRecord",
    "AttributesRecord",
    "GpuInstanceProfileRecord",
    "GpuInstanceRecord",
    "ComputeInstanceProfileRecord",
    "ComputeInstanceRecord",
    "EventRecord",
]


@dataclass(frozen=True, slots=True)
class GpuHandle:
    index: int


@dataclass(frozen=True, slots=True)
class MigHandle:
    gpu: int
    position: int


@dataclass(frozen=True, slots=True)
class GpuInstanceHandle:
    gpu: int
    gpu_instance: int


@dataclass(frozen=True, slots=True)
class ComputeInstanceHandle:
    gpu: int
    gpu_instance: int
    compute_instance: int


@dataclass(slots=True)
class EventSetHandle:
    registered: dict[int, int] = field(default_factory=dict)
    freed: bool = False


@dataclass(frozen=True, slots=True)
class PciRecord:
    busId: str
    domain: int
    bus: int
    device: int
    pciDeviceId: int
    pciSubSystemId: int


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    total: int
    free: int
    used: int


@dataclass(frozen=True, slots=True)
class MemoryV2Record:
    total: int
    reserved: int
    free: int
    used: int


@dataclass(frozen=True, slots=True)
class UtilizationRecord:
    gpu: int
    memory: int


@dataclass(frozen=True, slots=True)
class AttributesRecord:
    multiprocessorCount: int
    sharedCopyEngineCount: int
    sharedDecoderCount: int
    sharedEncoderCount: int
    sharedJpegCount: int
    sharedOfaCount: int
    gpuInstanceSliceCount: int
    computeInstanceSliceCount: int
    memorySizeMB: int


@dataclass(frozen=True, slots=True)
class GpuInstanceProfileRecord:
    id: int
    isP2pSupported: int
    sliceCount: int
    instanceCount: int
    multiprocessorCount: int
    copyEngineCount: int
    decoderCount: int
    encoderCount: int
    jpegCount: int
    ofaCount: int
    memorySizeMB: int
    name: str


@dataclass(frozen=True, slots=True)
class GpuInstanceRecord:
    device: GpuHandle
    id: int
    profileId: int


@dataclass(frozen=True, slots=True)
class ComputeInstanceProfileRecord:
    id: int
    sliceCount: int
    instanceCount: int
    multiprocessorCount: int
    sharedCopyEngineCount: int
    sharedDecoderCount: int
    sharedEncoderCount: int
    sharedJpegCount: int
    sharedOfaCount: int
    name: str


@dataclass(frozen=True, slots=True)
class ComputeInstanceRecord:
    device: GpuHandle
    gpuInstance: GpuInstanceHandle
    id: int
    profileId: int


@dataclass(frozen=True, slots=True)
class EventRecord:
    device: GpuHandle | MigHandle | None
    eventType: int
    eventData: int
    gpuInstanceId: int
    computeInstanceId: int
