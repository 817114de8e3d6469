"""Simulated GPM calls: performance-monitoring samples and the metrics between two of them.

GPU models of compute capability 9 and later (Hopper) support GPM, older ones answer "not supported", as NVML
does. Sample buffers are real `nvmlGpmSample_t` pointers (so the caller fills pynvml's own metrics-get
structure), each remembering which GPU or GPU instance it sampled. The metrics between two samples of the same
target are drawn from the model's utilisation ranges (activity percentages, with two decimals) and a fixed
PCIe range (MiB/s); metric ids outside the profiling set answer "not supported" in their own slot.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pynvml

from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail
from gpu_operator.agents.nvml.simulated.profile import NodeProfile, Telemetry

__all__ = ["GPM_COMPUTE_MAJOR", "PCIE_MIB_PER_SECOND", "GpmCalls", "GpmSupportRecord"]

#: The first compute capability (major) with GPM: Hopper.
GPM_COMPUTE_MAJOR = 9
#: The range simulated PCIe TX/RX rates are drawn from, in MiB/s.
PCIE_MIB_PER_SECOND = (0, 4096)
_HUNDREDTHS = 100
_BUFFER_BYTES = 8

#: GPM metric id -> the telemetry range (percent) its simulated values come from.
_PERCENT_RANGES: dict[int, Callable[[Telemetry], tuple[int, int]]] = {
    pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_SM_UTIL: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: lambda t: t.memory_util_percent,
    pynvml.NVML_GPM_METRIC_FP64_UTIL: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_FP32_UTIL: lambda t: t.gpu_util_percent,
    pynvml.NVML_GPM_METRIC_FP16_UTIL: lambda t: t.gpu_util_percent,
}
_RATE_RANGES: dict[int, tuple[int, int]] = {
    pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC: PCIE_MIB_PER_SECOND,
    pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC: PCIE_MIB_PER_SECOND,
}


@dataclass(frozen=True, slots=True)
class GpmSupportRecord:
    version: int
    isSupportedDevice: int


@dataclass(frozen=True, slots=True)
class _Taken:
    """What a sample buffer holds: the sampled GPU, GPU instance (None: whole GPU) and sequence number."""

    gpu: int
    gpu_instance: int | None
    sequence: int


def _address(sample: Any) -> int:
    address = ctypes.cast(sample, ctypes.c_void_p).value
    if address is None:
        fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
    return address


class GpmCalls(SimulatedCore):
    """nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc/Free, nvmlGpmSampleGet, nvmlGpmMigSampleGet, nvmlGpmMetricsGet."""

    def __init__(self, profile: NodeProfile, **options: Any) -> None:
        super().__init__(profile, **options)
        self._gpm_buffers: dict[int, Any] = {}
        self._gpm_taken: dict[int, _Taken | None] = {}
        self._gpm_sequence = 0

    def _gpm_gpu(self, handle: Any, name: str) -> int:
        index, _, model = self._gpu(handle, name)
        if model.compute_capability[0] < GPM_COMPUTE_MAJOR:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return index

    def _record(self, sample: Any, taken: _Taken) -> None:
        address = _address(sample)
        if address not in self._gpm_taken:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        self._gpm_taken[address] = taken

    def _next_sequence(self) -> int:
        with self._lock:
            self._gpm_sequence += 1
            return self._gpm_sequence

    def nvmlGpmQueryDeviceSupport(self, handle: Any) -> GpmSupportRecord:
        _, _, model = self._gpu(handle, "nvmlGpmQueryDeviceSupport")
        return GpmSupportRecord(version=1, isSupportedDevice=int(model.compute_capability[0] >= GPM_COMPUTE_MAJOR))

    def nvmlGpmSampleAlloc(self) -> Any:
        self._enter("nvmlGpmSampleAlloc")
        buffer = ctypes.create_string_buffer(_BUFFER_BYTES)
        sample = ctypes.cast(buffer, pynvml.c_nvmlGpmSample_t)
        self._gpm_buffers[_address(sample)] = buffer
        self._gpm_taken[_address(sample)] = None
        return sample

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._enter("nvmlGpmSampleFree")
        address = _address(sample)
        self._gpm_buffers.pop(address, None)
        self._gpm_taken.pop(address, None)

    def nvmlGpmSampleGet(self, handle: Any, sample: Any) -> Any:
        index = self._gpm_gpu(handle, "nvmlGpmSampleGet")
        self._record(sample, _Taken(index, None, self._next_sequence()))
        return sample

    def nvmlGpmMigSampleGet(self, handle: Any, gpu_instance_id: int, sample: Any) -> Any:
        index = self._gpm_gpu(handle, "nvmlGpmMigSampleGet")
        if not any(p.gpu_instance == gpu_instance_id for p in self._placements(self.profile.gpus[index])):
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        self._record(sample, _Taken(index, gpu_instance_id, self._next_sequence()))
        return sample

    def _gpm_value(self, taken: _Taken, metric: int) -> float | None:
        telemetry = self.profile.model_of(taken.gpu).telemetry
        key = f"gpm{'' if taken.gpu_instance is None else taken.gpu_instance}/{metric}"
        percent = _PERCENT_RANGES.get(metric)
        if percent is not None:
            low, high = percent(telemetry)
            return self._telemetry.gauge(taken.gpu, key, (low * _HUNDREDTHS, high * _HUNDREDTHS)) / _HUNDREDTHS
        rate = _RATE_RANGES.get(metric)
        return None if rate is None else float(self._telemetry.gauge(taken.gpu, key, rate))

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        self._enter("nvmlGpmMetricsGet")
        first = self._gpm_taken.get(_address(request.sample1))
        second = self._gpm_taken.get(_address(request.sample2))
        if first is None or second is None or (first.gpu, first.gpu_instance) != (second.gpu, second.gpu_instance):
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        if second.sequence <= first.sequence:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        self._checked(second.gpu, "nvmlGpmMetricsGet")
        for position in range(int(request.numMetrics)):
            metric = request.metrics[position]
            value = self._gpm_value(second, int(metric.metricId))
            metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED if value is None else pynvml.NVML_SUCCESS
            metric.value = 0.0 if value is None else value
        return request
