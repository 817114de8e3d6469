"""The adapter through pynvml's real wrappers, with only the C library replaced.

`pynvml.nvmlLib` is a stub whose attributes stand for the C functions: each receives the ctypes arguments the
wrapper built (buffers, `byref` pointers, handles) and writes its answer into them, returning an NVML return
code. A function the stub lacks is missing from the library, which pynvml reports as FUNCTION_NOT_FOUND - the
way an older driver answers. So the wrappers' argument building, the structures' layout and the adapter's
decoding run as on a node, including answers in the shapes real drivers give (the R545 memory-temperature tag).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pynvml
import pytest

from gpu_operator.agents.metrics_exporter.entities import gpu_instance_profile
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.agents.nvml.loader import release_pynvml

UUID = b"GPU-11111111-2222-3333-4444-555555555555"
HANDLE = 0x5000


def _write(ref: Any, value: int) -> None:
    ref._obj.value = value


def _handle_of(handle: Any) -> int | None:
    return ctypes.cast(handle, ctypes.c_void_p).value


class StubLibrary:
    """libnvidia-ml.so.1 as pynvml sees it: attributes are C functions returning NVML return codes."""

    def __init__(self, memory_temp_tag: int, extra: dict[str, Callable[..., int]] | None = None) -> None:
        self.memory_temp_tag = memory_temp_tag
        self.called: list[str] = []
        self.functions: dict[str, Callable[..., int]] = {
            "nvmlInitWithFlags": lambda flags: pynvml.NVML_SUCCESS,
            "nvmlShutdown": lambda: pynvml.NVML_SUCCESS,
            "nvmlSystemGetDriverVersion": self._text(b"545.23.08"),
            "nvmlSystemGetNVMLVersion": self._text(b"12.545.23.08"),
            "nvmlSystemGetCudaDriverVersion_v2": lambda ref: _write(ref, 12030) or pynvml.NVML_SUCCESS,
            "nvmlSystemGetCudaDriverVersion": lambda ref: _write(ref, 12030) or pynvml.NVML_SUCCESS,
            "nvmlDeviceGetCount_v2": lambda ref: _write(ref, 1) or pynvml.NVML_SUCCESS,
            "nvmlDeviceGetHandleByIndex_v2": self._handle_by_index,
            "nvmlDeviceGetUUID": self._device_text(UUID),
            "nvmlDeviceGetName": self._device_text(b"NVIDIA H100 80GB HBM3"),
            "nvmlDeviceGetTemperature": self._temperature,
            "nvmlDeviceGetFieldValues": self._field_values,
            **(extra or {}),
        }

    def __getattr__(self, name: str) -> Callable[..., int]:
        functions = self.__dict__.get("functions", {})
        if name not in functions:
            raise AttributeError(name)
        self.__dict__["called"].append(name)
        return functions[name]

    @staticmethod
    def _text(value: bytes) -> Callable[..., int]:
        def function(buffer: Any, size: Any) -> int:
            buffer.value = value
            return pynvml.NVML_SUCCESS

        return function

    @staticmethod
    def _device_text(value: bytes) -> Callable[..., int]:
        def function(handle: Any, buffer: Any, size: Any) -> int:
            if _handle_of(handle) != HANDLE:
                return pynvml.NVML_ERROR_INVALID_ARGUMENT
            buffer.value = value
            return pynvml.NVML_SUCCESS

        return function

    @staticmethod
    def _handle_by_index(index: Any, ref: Any) -> int:
        if index.value != 0:
            return pynvml.NVML_ERROR_INVALID_ARGUMENT
        pointer = ctypes.c_void_p(HANDLE)
        ctypes.memmove(ctypes.addressof(ref._obj), ctypes.addressof(pointer), ctypes.sizeof(pointer))
        return pynvml.NVML_SUCCESS

    @staticmethod
    def _temperature(handle: Any, sensor: Any, ref: Any) -> int:
        _write(ref, 41)
        return pynvml.NVML_SUCCESS

    def _field_values(self, handle: Any, count: Any, ref: Any) -> int:
        for value in ref._obj[: count.value]:
            if value.fieldId == pynvml.NVML_FI_DEV_MEMORY_TEMP:
                value.valueType = self.memory_temp_tag
                value.value.uiVal = 71
                value.nvmlReturn = pynvml.NVML_SUCCESS
            elif value.fieldId == pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
                value.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                value.value.ullVal = 123_456_789_012
                value.nvmlReturn = pynvml.NVML_SUCCESS
            else:
                value.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
        return pynvml.NVML_SUCCESS


@pytest.fixture
def install(tmp_path: Path) -> Iterator[Callable[[StubLibrary], Any]]:
    def installed(stub: StubLibrary) -> Any:
        release_pynvml()
        pynvml.nvmlLib = stub
        return open_nvml("auto", environ={}, sysfs_root=str(tmp_path))

    with mock.patch("gpu_operator.agents.nvml.selection.load_into_pynvml", return_value="/host/usr/lib64/stub"):
        try:
            yield installed
        finally:
            release_pynvml()


def test_inventory_through_the_real_wrappers(install: Callable[[StubLibrary], Any]) -> None:
    stub = StubLibrary(pynvml.NVML_VALUE_TYPE_UNSIGNED_INT)
    nvml = install(stub)
    system = nvml.system()
    assert (system.driver_version, system.device_count) == ("545.23.08", 1)
    (gpu,) = nvml.devices()
    assert (gpu.uuid, gpu.name) == (UUID.decode(), "NVIDIA H100 80GB HBM3")
    assert not gpu.lost
    # functions an old driver lacks are unknown values, not failures
    assert gpu.mig_devices == ()


@pytest.mark.parametrize("tag", [pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, pynvml.NVML_VALUE_TYPE_DOUBLE])
def test_field_values_through_the_real_wrappers(install: Callable[[StubLibrary], Any], tag: int) -> None:
    # DOUBLE is the tag R545 drivers put on the unsigned memory temperature they write
    (sample,) = install(StubLibrary(tag)).sample()
    assert sample.memory_temp_c == 71
    assert sample.total_energy_mj == 123_456_789_012
    assert sample.gpu_temp_c == 41
    assert sample.pcie_replay_count is None


MIG_HANDLE = 0x6000


def _mig_functions() -> dict[str, Callable[..., int]]:
    """One A100 80GB in MIG mode with one 1g.10gb device, to a process without the MIG monitor capability."""

    def mig_mode(handle: Any, current: Any, pending: Any) -> int:
        _write(current, 1)
        _write(pending, 1)
        return pynvml.NVML_SUCCESS

    def memory_v2(handle: Any, ref: Any) -> int:
        ref._obj.total, ref._obj.used, ref._obj.free = 81920 << 20, 0, 81920 << 20
        return pynvml.NVML_SUCCESS

    def mig_handle(handle: Any, index: Any, ref: Any) -> int:
        if index.value != 0:
            return pynvml.NVML_ERROR_NOT_FOUND
        pointer = ctypes.c_void_p(MIG_HANDLE)
        ctypes.memmove(ctypes.addressof(ref._obj), ctypes.addressof(pointer), ctypes.sizeof(pointer))
        return pynvml.NVML_SUCCESS

    def attributes(handle: Any, ref: Any) -> int:
        raw = ref._obj
        raw.multiprocessorCount, raw.gpuInstanceSliceCount, raw.computeInstanceSliceCount = 14, 1, 1
        raw.memorySizeMB = 9728
        return pynvml.NVML_SUCCESS

    return {
        "nvmlDeviceGetMigMode": mig_mode,
        "nvmlDeviceGetMemoryInfo_v2": memory_v2,
        "nvmlDeviceGetMaxMigDeviceCount": lambda handle, ref: _write(ref, 7) or pynvml.NVML_SUCCESS,
        "nvmlDeviceGetMigDeviceHandleByIndex": mig_handle,
        "nvmlDeviceGetGpuInstanceId": lambda handle, ref: _write(ref, 7) or pynvml.NVML_SUCCESS,
        "nvmlDeviceGetComputeInstanceId": lambda handle, ref: _write(ref, 0) or pynvml.NVML_SUCCESS,
        "nvmlDeviceGetAttributes_v2": attributes,
        "nvmlDeviceGetGpuInstanceProfileInfoV": lambda *args: pynvml.NVML_ERROR_NO_PERMISSION,
        "nvmlDeviceGetGpuInstanceProfileInfo": lambda *args: pynvml.NVML_ERROR_NO_PERMISSION,
        "nvmlDeviceGetGpuInstanceById": lambda *args: pynvml.NVML_ERROR_NO_PERMISSION,
    }


def test_mig_instance_queries_refused_leave_the_mig_device_readable(install: Callable[[StubLibrary], Any]) -> None:
    (gpu,) = install(StubLibrary(pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, _mig_functions())).devices()
    assert gpu.mig_mode is not None and gpu.mig_mode.current
    (device,) = gpu.mig_devices
    assert (device.gpu_instance_id, device.compute_instance_id) == (7, 0)
    assert device.attributes is not None and device.attributes.memory_mib == 9728
    assert device.profile is None  # go-nvlib's name needs the refused profile lookups
    assert gpu_instance_profile(device) == "1g.10gb"  # the exporter names it from the attributes
