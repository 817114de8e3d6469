"""Simulated MIG writes: set MIG mode, create and destroy GPU and compute instances with placement.

The GPU's memory is eight slices. A GPU instance covers `ceil(memory / (total / 8))` of them (rounded up to
a power of two), starting at a multiple of that size, and its compute slices must end by the seventh slice:
on A100/H100 this gives NVIDIA's placements (1g: 0-6, 1g.20gb and 2g: 0,2,4(,6), 3g: 0,4, 4g and 7g: 0).
A new instance takes the lowest free start; one that fits nowhere, or exceeds its profile's instance count,
fails with "insufficient resources" as NVML does. A GPU instance without a compute instance is no MIG device,
so it is kept aside until a compute instance is created in it: one per GPU instance, full-size or smaller (a
`1c.2g.20gb` MIG device is a one-slice compute instance in a two-slice GPU instance); a compute instance larger
than its GPU instance is "not supported".
The MIG mode can change only while the GPU has no instances ("in use" otherwise); it takes effect at once.
"""

from __future__ import annotations

from typing import Any

import pynvml

from gpu_operator.agents.nvml.mig_profile import COMPUTE_INSTANCE_SLICES
from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail
from gpu_operator.agents.nvml.simulated.profile import (
    GpuInstanceProfile,
    GpuModel,
    MigLayout,
    MigPlacement,
    NodeProfile,
)
from gpu_operator.agents.nvml.simulated.records import ComputeInstanceHandle, GpuInstanceHandle

__all__ = ["MigWriteCalls"]

_MEMORY_SLICES = 8
_COMPUTE_SLICES = 7
#: The standard compute instance profile indices (1_SLICE .. 7_SLICE, 8_SLICE, 6_SLICE; not the REV1 and NVL ones)
#: -> slices.
_STANDARD_COMPUTE_SLICES = {index: slices for index, slices in COMPUTE_INSTANCE_SLICES.items() if index < 7}


def _size(model: GpuModel, profile: GpuInstanceProfile) -> int:
    """Memory slices a GPU instance of this profile covers (a power of two)."""
    needed = -(-profile.memory_mib * _MEMORY_SLICES // model.memory_mib)
    size = 1
    while size < needed:
        size *= 2
    return size


class MigWriteCalls(SimulatedCore):
    """nvmlDeviceSetMigMode and the GPU/compute instance create, list and destroy calls."""

    def __init__(self, profile: NodeProfile, **options: Any) -> None:
        super().__init__(profile, **options)
        #: GPU -> GPU instance id -> profile name, for GPU instances without a compute instance.
        self._bare_instances: dict[int, dict[int, str]] = {}
        #: (GPU, GPU instance id) -> first memory slice.
        self._starts: dict[tuple[int, int], int] = {}

    def _bare(self) -> dict[int, dict[int, str]]:
        return self._bare_instances

    def _set_layout(self, index: int, layout: MigLayout) -> None:
        gpus = list(self.profile.gpus)
        gpus[index] = gpus[index].model_copy(update={"mig": layout})
        self.profile = self.profile.model_copy(update={"gpus": tuple(gpus)})

    def _instances(self, index: int) -> dict[int, str]:
        """Every GPU instance of a GPU (with or without a compute instance) -> its profile name."""
        found = {p.gpu_instance: p.profile for p in self._placements(self.profile.gpus[index])}
        return {**found, **self._bare().get(index, {})}

    def _start_of(self, index: int, gpu_instance: int, model: GpuModel, taken: set[int]) -> int:
        """Where an instance lies; instances the profile started with are placed at their first fit."""
        key = (index, gpu_instance)
        if key not in self._starts:
            profile = model.mig_profile(self._instances(index)[gpu_instance])
            assert profile is not None
            start = self._free_start(model, profile, taken)
            self._starts[key] = 0 if start is None else start
        return self._starts[key]

    @staticmethod
    def _free_start(model: GpuModel, profile: GpuInstanceProfile, taken: set[int]) -> int | None:
        size = _size(model, profile)
        for start in range(0, _MEMORY_SLICES, size):
            span = set(range(start, start + size))
            if start + profile.slices <= _COMPUTE_SLICES and not span & taken:
                return start
        return None

    def _taken(self, index: int, model: GpuModel) -> set[int]:
        taken: set[int] = set()
        for gpu_instance, name in sorted(self._instances(index).items()):
            profile = model.mig_profile(name)
            assert profile is not None
            start = self._start_of(index, gpu_instance, model, taken)
            taken |= set(range(start, start + _size(model, profile)))
        return taken

    def nvmlDeviceSetMigMode(self, handle: Any, mode: int) -> int:
        index, gpu, _ = self._mig_capable(handle, "nvmlDeviceSetMigMode")
        if mode not in (pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_DISABLE):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if self._instances(index):
            fail(pynvml.NVML_ERROR_IN_USE)
        self._set_layout(index, MigLayout(current=bool(mode), devices=()))
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetGpuInstances(self, handle: Any, profile_id: int) -> list[GpuInstanceHandle]:
        index, gpu, model = self._mig_capable(handle, "nvmlDeviceGetGpuInstances")
        if gpu.mig is None or not gpu.mig.current:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        names = {p.name for p in model.mig_profiles if p.id == profile_id}
        if not names:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return [GpuInstanceHandle(index, gi) for gi, name in sorted(self._instances(index).items()) if name in names]

    def nvmlDeviceCreateGpuInstance(self, handle: Any, profile_id: int) -> GpuInstanceHandle:
        index, gpu, model = self._mig_capable(handle, "nvmlDeviceCreateGpuInstance")
        if gpu.mig is None or not gpu.mig.current:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        profile = next((p for p in model.mig_profiles if p.id == profile_id), None)
        if profile is None:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        instances = self._instances(index)
        if sum(name == profile.name for name in instances.values()) >= profile.instances:
            fail(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES)
        start = self._free_start(model, profile, self._taken(index, model))
        if start is None:
            fail(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES)
        gpu_instance = next(i for i in range(1, len(instances) + 2) if i not in instances)
        self._bare().setdefault(index, {})[gpu_instance] = profile.name
        self._starts[(index, gpu_instance)] = start
        return GpuInstanceHandle(index, gpu_instance)

    def nvmlGpuInstanceCreateComputeInstance(self, gpu_instance: Any, profile_id: int) -> ComputeInstanceHandle:
        self._enter("nvmlGpuInstanceCreateComputeInstance")
        index, gi = gpu_instance.gpu, gpu_instance.gpu_instance
        bare = self._bare().get(index, {})
        if gi not in bare:
            in_use = gi in self._instances(index)
            fail(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES if in_use else pynvml.NVML_ERROR_NOT_FOUND)
        model = self.profile.model_of(index)
        profile = model.mig_profile(bare[gi])
        assert profile is not None
        slices = _STANDARD_COMPUTE_SLICES.get(profile_id)
        if slices is None or slices > profile.slices:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        layout = self.profile.gpus[index].mig
        assert layout is not None
        smaller = slices if slices < profile.slices else None
        placement = MigPlacement(profile=bare.pop(gi), gpu_instance=gi, compute_instance=0, compute_slices=smaller)
        self._set_layout(index, layout.model_copy(update={"devices": (*layout.devices, placement)}))
        return ComputeInstanceHandle(index, gi, 0)

    def nvmlGpuInstanceGetComputeInstances(self, gpu_instance: Any, profile_id: int) -> list[ComputeInstanceHandle]:
        self._enter("nvmlGpuInstanceGetComputeInstances")
        placements = self._placements(self.profile.gpus[gpu_instance.gpu])
        return [
            ComputeInstanceHandle(gpu_instance.gpu, p.gpu_instance, p.compute_instance)
            for p in placements
            if p.gpu_instance == gpu_instance.gpu_instance
            and self.nvmlComputeInstanceGetInfo(  # type: ignore[attr-defined]
                ComputeInstanceHandle(gpu_instance.gpu, p.gpu_instance, p.compute_instance)
            ).profileId
            == profile_id
        ]

    def nvmlComputeInstanceDestroy(self, compute_instance: Any) -> None:
        self._enter("nvmlComputeInstanceDestroy")
        index = compute_instance.gpu
        layout = self.profile.gpus[index].mig
        assert layout is not None
        key = (compute_instance.gpu_instance, compute_instance.compute_instance)
        gone = [p for p in layout.devices if (p.gpu_instance, p.compute_instance) == key]
        if not gone:
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        model = self.profile.model_of(index)
        self._taken(index, model)  # fix the starts of instances the profile began with before one changes
        kept = tuple(p for p in layout.devices if (p.gpu_instance, p.compute_instance) != key)
        self._set_layout(index, layout.model_copy(update={"devices": kept}))
        if not any(p.gpu_instance == compute_instance.gpu_instance for p in kept):
            self._bare().setdefault(index, {})[compute_instance.gpu_instance] = gone[0].profile

    def nvmlGpuInstanceDestroy(self, gpu_instance: Any) -> None:
        self._enter("nvmlGpuInstanceDestroy")
        index, gi = gpu_instance.gpu, gpu_instance.gpu_instance
        bare = self._bare().get(index, {})
        if gi not in bare:
            fail(pynvml.NVML_ERROR_IN_USE if gi in self._instances(index) else pynvml.NVML_ERROR_NOT_FOUND)
        del bare[gi]
        self._starts.pop((index, gi), None)
