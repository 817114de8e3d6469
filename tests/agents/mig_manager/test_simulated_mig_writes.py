"""The simulated NVML's MIG writes the manager relies on: mode, placement limits, destroy order, adapter view."""

from __future__ import annotations

import pynvml
import pytest

from gpu_operator.agents.nvml.simulated import SimulatedLibrary, load_profile

# A100 80GB profile ids (index -> id differ): 1g.10gb=19, 1g.20gb=15, 2g.20gb=14, 3g.40gb=9, 4g.40gb=5, 7g.80gb=0
ID = {"1g.10gb": 19, "1g.10gb+me": 20, "1g.20gb": 15, "2g.20gb": 14, "3g.40gb": 9, "4g.40gb": 5, "7g.80gb": 0}
FULL_CI = {"1g.10gb": 0, "1g.10gb+me": 0, "1g.20gb": 0, "2g.20gb": 1, "3g.40gb": 2, "4g.40gb": 3, "7g.80gb": 4}


@pytest.fixture
def lib() -> SimulatedLibrary:
    library = SimulatedLibrary(load_profile("a100-4x-mixed-mig"), sleep=lambda _: None)
    library.nvmlInitWithFlags(0)
    return library


def _code(call: object, *args: object) -> int:
    with pytest.raises(pynvml.NVMLError) as error:
        call(*args)  # type: ignore[operator]
    return error.value.value


def _clear(lib: SimulatedLibrary, handle: object) -> None:
    for profile_id in ID.values():
        for gi in lib.nvmlDeviceGetGpuInstances(handle, profile_id):
            for ci_profile in range(8):
                try:
                    cis = lib.nvmlGpuInstanceGetComputeInstances(gi, ci_profile)
                except pynvml.NVMLError:
                    continue
                for ci in cis:
                    lib.nvmlComputeInstanceDestroy(ci)
            lib.nvmlGpuInstanceDestroy(gi)


def _create(lib: SimulatedLibrary, handle: object, name: str) -> None:
    gi = lib.nvmlDeviceCreateGpuInstance(handle, ID[name])
    lib.nvmlGpuInstanceCreateComputeInstance(gi, FULL_CI[name])


def test_mode_needs_no_instances_and_takes_effect(lib: SimulatedLibrary) -> None:
    handle = lib.nvmlDeviceGetHandleByIndex(0)  # all-1g.10gb
    assert _code(lib.nvmlDeviceSetMigMode, handle, pynvml.NVML_DEVICE_MIG_DISABLE) == pynvml.NVML_ERROR_IN_USE
    gi = lib.nvmlDeviceGetGpuInstances(handle, ID["1g.10gb"])[0]
    assert _code(lib.nvmlGpuInstanceDestroy, gi) == pynvml.NVML_ERROR_IN_USE  # its compute instance first
    _clear(lib, handle)
    assert lib.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_DISABLE) == pynvml.NVML_SUCCESS
    assert lib.nvmlDeviceGetMigMode(handle) == [0, 0]
    assert _code(lib.nvmlDeviceCreateGpuInstance, handle, ID["1g.10gb"]) == pynvml.NVML_ERROR_INVALID_ARGUMENT


def test_placements_and_instance_limits(lib: SimulatedLibrary) -> None:
    handle = lib.nvmlDeviceGetHandleByIndex(2)  # MIG off
    lib.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    _create(lib, handle, "3g.40gb")  # slices 0-3
    _create(lib, handle, "3g.40gb")  # slices 4-7
    assert _code(lib.nvmlDeviceCreateGpuInstance, handle, ID["1g.10gb"]) == pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
    _clear(lib, handle)
    _create(lib, handle, "2g.20gb")
    _create(lib, handle, "2g.20gb")
    _create(lib, handle, "2g.20gb")  # 0, 2, 4: no 2g at 6 (its compute would pass the seventh slice)
    assert _code(lib.nvmlDeviceCreateGpuInstance, handle, ID["2g.20gb"]) == pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
    _create(lib, handle, "1g.10gb")  # slice 6 is left
    _clear(lib, handle)
    _create(lib, handle, "1g.10gb+me")
    assert _code(lib.nvmlDeviceCreateGpuInstance, handle, ID["1g.10gb+me"]) == pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES


def test_created_instances_are_mig_devices(lib: SimulatedLibrary) -> None:
    handle = lib.nvmlDeviceGetHandleByIndex(3)
    lib.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    _create(lib, handle, "4g.40gb")
    _create(lib, handle, "2g.20gb")
    mig = lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, 1)
    gi = lib.nvmlDeviceGetGpuInstanceById(handle, lib.nvmlDeviceGetGpuInstanceId(mig))
    assert lib.nvmlGpuInstanceGetInfo(gi).profileId == ID["2g.20gb"]
    assert lib.nvmlDeviceGetAttributes(mig).gpuInstanceSliceCount == 2
    assert _code(lib.nvmlDeviceGetMigDeviceHandleByIndex, handle, 2) == pynvml.NVML_ERROR_NOT_FOUND


def test_a_compute_instance_may_be_smaller_than_its_gpu_instance_but_not_larger(lib: SimulatedLibrary) -> None:
    handle = lib.nvmlDeviceGetHandleByIndex(2)  # MIG off
    lib.nvmlDeviceSetMigMode(handle, pynvml.NVML_DEVICE_MIG_ENABLE)
    gi = lib.nvmlDeviceCreateGpuInstance(handle, ID["2g.20gb"])
    three = pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE
    assert _code(lib.nvmlGpuInstanceCreateComputeInstance, gi, three) == pynvml.NVML_ERROR_NOT_SUPPORTED
    lib.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
    placement, = lib.profile.gpus[2].mig.devices  # type: ignore[union-attr]
    assert (placement.profile, placement.compute_slices) == ("2g.20gb", 1)
