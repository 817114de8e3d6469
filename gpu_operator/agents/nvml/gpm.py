"""GPU performance monitoring (GPM): engine activity ratios and PCIe rates on Hopper and later GPUs.

GPM is NVML's own profiling: a *sample* is a snapshot of the GPU's performance counters, and
`nvmlGpmMetricsGet` turns two samples into metrics over the time between them - percentages (graphics engine,
SM, tensor, DRAM, FP64/32/16 activity) and rates (PCIe MiB/s). DCGM computes its `DCGM_FI_PROF_*` fields from
exactly these on Hopper and newer; older GPUs answer `nvmlGpmQueryDeviceSupport` with "not supported" and get
no GPM readings. A MIG-enabled GPU is sampled per GPU instance (`nvmlGpmMigSampleGet`).

:class:`GpmWatch` keeps the previous sample of each target, so each `read()` is one sample per target and yields
the metrics since the previous `read()`; the first `read()` only takes the baseline and yields nothing.
Unsupported GPUs, GPUs that went away and metrics that came back with an error or NaN are left out.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pynvml

from gpu_operator.agents.nvml.errors import NvmlError, NvmlGpuLost
from gpu_operator.agents.nvml.library import Handle
from gpu_operator.agents.nvml.reading import call, optional

__all__ = [
    "ANY_TENSOR_UTIL",
    "DRAM_BW_UTIL",
    "FP16_UTIL",
    "FP32_UTIL",
    "FP64_UTIL",
    "GPM_METRICS",
    "GRAPHICS_UTIL",
    "PCIE_RX_PER_SEC",
    "PCIE_TX_PER_SEC",
    "SM_OCCUPANCY",
    "SM_UTIL",
    "GpmLibrary",
    "GpmTarget",
    "GpmWatch",
]

_log = logging.getLogger(__name__)

GRAPHICS_UTIL = pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL
SM_UTIL = pynvml.NVML_GPM_METRIC_SM_UTIL
SM_OCCUPANCY = pynvml.NVML_GPM_METRIC_SM_OCCUPANCY
ANY_TENSOR_UTIL = pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL
DRAM_BW_UTIL = pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL
FP64_UTIL = pynvml.NVML_GPM_METRIC_FP64_UTIL
FP32_UTIL = pynvml.NVML_GPM_METRIC_FP32_UTIL
FP16_UTIL = pynvml.NVML_GPM_METRIC_FP16_UTIL
PCIE_TX_PER_SEC = pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC
PCIE_RX_PER_SEC = pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC

#: The metrics asked for on every read: the sources of DCGM's profiling fields (percentages, then MiB/s).
GPM_METRICS: tuple[int, ...] = (
    GRAPHICS_UTIL,
    SM_UTIL,
    SM_OCCUPANCY,
    ANY_TENSOR_UTIL,
    DRAM_BW_UTIL,
    FP64_UTIL,
    FP32_UTIL,
    FP16_UTIL,
    PCIE_TX_PER_SEC,
    PCIE_RX_PER_SEC,
)


class GpmLibrary(Protocol):
    """The pynvml calls GPM needs (pynvml's names and argument order)."""

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle: ...
    def nvmlGpmQueryDeviceSupport(self, handle: Handle) -> Any: ...
    def nvmlGpmSampleAlloc(self) -> Any: ...
    def nvmlGpmSampleGet(self, handle: Handle, sample: Any) -> Any: ...
    def nvmlGpmMigSampleGet(self, handle: Handle, gpu_instance_id: int, sample: Any) -> Any: ...
    def nvmlGpmMetricsGet(self, request: Any) -> Any: ...
    def nvmlGpmSampleFree(self, sample: Any) -> None: ...


@dataclass(frozen=True, slots=True, order=True)
class GpmTarget:
    """What is sampled: a whole GPU (by NVML index), or one GPU instance of a MIG-enabled GPU."""

    gpu: int
    gpu_instance_id: int | None = None


@dataclass(slots=True)
class _Samples:
    """Two sample buffers per target, used in turn; `previous` is None until the baseline is taken."""

    buffers: list[Any]
    previous: int | None = None
    next_buffer: int = 0
    unavailable: bool = False


def _request(metric_ids: Iterable[int]) -> Any:
    request: Any = pynvml.c_nvmlGpmMetricsGet_t()
    request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    ids = tuple(metric_ids)
    request.numMetrics = len(ids)
    for position, metric in enumerate(ids):
        request.metrics[position].metricId = metric
    return request


def _supported_handle(lib: GpmLibrary, gpu: int) -> Handle | None:
    """The GPU's handle when it supports GPM; None when it does not, or cannot be asked (lost)."""
    try:
        handle = call(lambda: lib.nvmlDeviceGetHandleByIndex(gpu))
        support = call(lambda: lib.nvmlGpmQueryDeviceSupport(handle))
    except NvmlError as error:
        _log.debug("GPU %d: no GPM: %s", gpu, error)
        return None
    return handle if support.isSupportedDevice else None


@dataclass
class GpmWatch:
    """GPM readings of `targets` since the previous `read()`; `close()` frees the samples."""

    lib: GpmLibrary
    targets: tuple[GpmTarget, ...]
    metric_ids: tuple[int, ...] = GPM_METRICS
    _handles: dict[int, Handle] = field(default_factory=dict, init=False)
    _samples: dict[GpmTarget, _Samples] = field(default_factory=dict, init=False)
    _request: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._request = _request(self.metric_ids)
        for gpu in sorted({t.gpu for t in self.targets}):
            handle = _supported_handle(self.lib, gpu)
            if handle is not None:
                self._handles[gpu] = handle
        _log.info("GPM profiling metrics on GPUs %s", sorted(self._handles) or "none")

    @property
    def supported_gpus(self) -> tuple[int, ...]:
        return tuple(sorted(self._handles))

    def _samples_of(self, target: GpmTarget) -> _Samples:
        samples = self._samples.get(target)
        if samples is None:
            buffers = [call(self.lib.nvmlGpmSampleAlloc), call(self.lib.nvmlGpmSampleAlloc)]
            samples = self._samples[target] = _Samples(buffers)
        return samples

    def _take(self, target: GpmTarget, handle: Handle, buffer: Any) -> None:
        if target.gpu_instance_id is None:
            call(lambda: self.lib.nvmlGpmSampleGet(handle, buffer))
        else:
            instance = target.gpu_instance_id
            call(lambda: self.lib.nvmlGpmMigSampleGet(handle, instance, buffer))

    def _metrics(self, first: Any, second: Any) -> dict[int, float]:
        request = self._request
        request.sample1, request.sample2 = first, second
        call(lambda: self.lib.nvmlGpmMetricsGet(request))
        values: dict[int, float] = {}
        for position in range(len(self.metric_ids)):
            metric = request.metrics[position]
            value = float(metric.value)
            if int(metric.nvmlReturn) == pynvml.NVML_SUCCESS and not math.isnan(value):
                values[int(metric.metricId)] = value
        return values

    def _read_one(self, target: GpmTarget, handle: Handle) -> dict[int, float] | None:
        samples = self._samples_of(target)
        current = samples.next_buffer
        self._take(target, handle, samples.buffers[current])
        previous, samples.previous, samples.next_buffer = samples.previous, current, 1 - current
        if previous is None:
            return None
        return self._metrics(samples.buffers[previous], samples.buffers[current])

    def read(self) -> Mapping[GpmTarget, Mapping[int, float]]:
        """Metric id -> value (percent, or MiB/s for PCIe) per target, over the time since the last read."""
        readings: dict[GpmTarget, Mapping[int, float]] = {}
        for target in self.targets:
            handle = self._handles.get(target.gpu)
            if handle is None:
                continue
            try:
                values = self._read_one(target, handle)
            except NvmlGpuLost:
                self._samples.pop(target, None)
                continue
            except NvmlError as error:
                _log.debug("GPM reading of %s failed: %s", target, error)
                continue
            if values:
                readings[target] = values
        return readings

    def close(self) -> None:
        for samples in self._samples.values():
            for buffer in samples.buffers:
                optional(lambda buffer=buffer: self.lib.nvmlGpmSampleFree(buffer))
        self._samples.clear()
