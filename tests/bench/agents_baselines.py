"""Naive baselines for the agents benchmarks: how an exporter and a labeller look without this design.

* :func:`naive_collect` reads every field of every GPU with its own NVML call (handle looked up again, field
  values asked one id at a time) and renders through a fresh prometheus_client registry with one Gauge per
  metric - what a straightforward pynvml exporter does per collection.
* :class:`NaiveNvmlCollector` is a prometheus_client exporter that does those reads on every scrape, with a
  Gauge per metric (the usual "collect on scrape" pattern).
* :func:`naive_labels` computes the feature-discovery labels with a fresh NVML inventory for every labeller.

All of them talk to the same simulated library the real agents use, so the comparison is like for like.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pynvml
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.metrics_core import Metric

from gpu_operator.agents.feature_discovery import LabelPolicy
from gpu_operator.agents.feature_discovery.labels import DEVICE_LABELERS, LabelInputs
from gpu_operator.agents.feature_discovery.vgpu import vgpu_labels
from gpu_operator.agents.nvml import Nvml

__all__ = ["NAIVE_FIELDS", "NaiveNvmlCollector", "naive_collect", "naive_labels", "naive_read"]

MIB = 1 << 20
IDENTITY = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname", "DCGM_FI_DRIVER_VERSION")


def _field(field_id: int) -> Callable[[Any, Any], float]:
    def read(lib: Any, handle: Any) -> float:
        (value,) = lib.nvmlDeviceGetFieldValues(handle, [field_id])
        return float(value.value.ullVal)

    return read


#: Metric name -> how the naive exporter reads it (one NVML call each).
NAIVE_FIELDS: dict[str, Callable[[Any, Any], float]] = {
    "DCGM_FI_DEV_SM_CLOCK": lambda lib, h: lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
    "DCGM_FI_DEV_MEM_CLOCK": lambda lib, h: lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
    "DCGM_FI_DEV_GPU_TEMP": lambda lib, h: lib.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
    "DCGM_FI_DEV_MEMORY_TEMP": _field(pynvml.NVML_FI_DEV_MEMORY_TEMP),
    "DCGM_FI_DEV_POWER_USAGE": lambda lib, h: lib.nvmlDeviceGetPowerUsage(h) / 1000.0,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": _field(pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": _field(pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER),
    "DCGM_FI_DEV_GPU_UTIL": lambda lib, h: lib.nvmlDeviceGetUtilizationRates(h).gpu,
    "DCGM_FI_DEV_MEM_COPY_UTIL": lambda lib, h: lib.nvmlDeviceGetUtilizationRates(h).memory,
    "DCGM_FI_DEV_ENC_UTIL": lambda lib, h: lib.nvmlDeviceGetEncoderUtilization(h)[0],
    "DCGM_FI_DEV_DEC_UTIL": lambda lib, h: lib.nvmlDeviceGetDecoderUtilization(h)[0],
    "DCGM_FI_DEV_FB_FREE": lambda lib, h: lib.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).free // MIB,
    "DCGM_FI_DEV_FB_USED": lambda lib, h: lib.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).used // MIB,
    "DCGM_FI_DEV_FB_RESERVED": lambda lib, h: lib.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).reserved
    // MIB,
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": _field(pynvml.NVML_FI_DEV_REMAPPED_UNC),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": _field(pynvml.NVML_FI_DEV_REMAPPED_COR),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": _field(pynvml.NVML_FI_DEV_REMAPPED_FAILURE),
}


def _identity(lib: Any, index: int, hostname: str) -> tuple[str, ...]:
    handle = lib.nvmlDeviceGetHandleByIndex(index)
    return (
        str(index),
        lib.nvmlDeviceGetUUID(handle),
        lib.nvmlDeviceGetPciInfo(handle).busId,
        f"nvidia{index}",
        lib.nvmlDeviceGetName(handle),
        hostname,
        lib.nvmlSystemGetDriverVersion(),
    )


def naive_read(lib: Any, hostname: str) -> Iterator[tuple[str, tuple[str, ...], float]]:
    """(metric, label values, value) for every field of every GPU, one NVML call per value."""
    for index in range(lib.nvmlDeviceGetCount()):
        labels = _identity(lib, index, hostname)
        for name, read in NAIVE_FIELDS.items():
            yield name, labels, float(read(lib, lib.nvmlDeviceGetHandleByIndex(index)))


def naive_collect(lib: Any, hostname: str) -> bytes:
    """A collection the naive way: fresh registry, a Gauge per metric, every value read on its own."""
    registry = CollectorRegistry()
    gauges = {name: Gauge(name, name, IDENTITY, registry=registry) for name in NAIVE_FIELDS}
    for name, labels, value in naive_read(lib, hostname):
        gauges[name].labels(*labels).set(value)
    return generate_latest(registry)


class NaiveNvmlCollector:
    """A prometheus_client collector with a Gauge per metric, refreshed from NVML on every scrape."""

    def __init__(self, lib: Any, hostname: str) -> None:
        self._lib = lib
        self._hostname = hostname
        self._registry = CollectorRegistry()
        self._gauges = {name: Gauge(name, name, IDENTITY, registry=self._registry) for name in NAIVE_FIELDS}

    def collect(self) -> Iterator[Metric]:
        for name, labels, value in naive_read(self._lib, self._hostname):
            self._gauges[name].labels(*labels).set(value)
        for gauge in self._gauges.values():
            yield from gauge.collect()


def naive_labels(nvml: Nvml, policy: LabelPolicy, machine_type: str | None) -> dict[str, str]:
    """The same labels as `node_labels`, but every labeller reads the GPUs again (as GFD's labellers each
    walk the devices): one full NVML inventory per labeller instead of one per pass."""
    labels: dict[str, str] = {}
    for labeler in DEVICE_LABELERS:
        inputs = LabelInputs(nvml.devices(), nvml.system(), policy, machine_type)
        labels.update(labeler(inputs))
    labels.update(vgpu_labels(nvml.pci.nvidia_functions()))
    return labels
