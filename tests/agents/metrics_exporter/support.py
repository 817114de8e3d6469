"""Shared helpers of the metrics exporter tests: a collector over a simulated node, output parsed back."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from gpu_operator.agents.metrics_exporter import (
    Attribution,
    Collector,
    Counter,
    IdentityOptions,
    Sources,
)
from gpu_operator.agents.metrics_exporter.counters import packaged_default_counters
from gpu_operator.agents.metrics_exporter.xid import XidTracker
from gpu_operator.agents.nvml import Nvml, open_nvml
from gpu_operator.agents.nvml.gpm import GpmTarget, GpmWatch
from gpu_operator.agents.nvml.licensing import LicenseReader
from gpu_operator.agents.nvml.underlying import library_of

__all__ = ["HOST", "NOT_SUPPORTED", "PROFILING", "UTILISATION", "families_of", "make_collector", "parse"]

HOST = "gpu-node-1"

PROFILING = frozenset(
    {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    }
)
UTILISATION = frozenset(
    {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL"}
)
#: Default fields each simulated profile cannot provide, and why.
NOT_SUPPORTED: dict[str, frozenset[str]] = {
    "h100-8x": frozenset(),
    "h200-8x": frozenset(),
    # Ampere has no GPM; NVML refuses utilisation queries on a GPU in MIG mode.
    "a100-8x-mig": PROFILING | UTILISATION,
    "a100-4x-mixed-mig": PROFILING,
    # Hopper has GPM (per GPU instance under MIG); utilisation is refused in MIG mode as on Ampere.
    "h100-8x-mig": UTILISATION,
    # Turing: no GPM, no HBM temperature sensor, no NVLink, no row remapping.
    "t4-1x": PROFILING
    | {
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    },
}


def make_collector(
    profile: str,
    counters: Sequence[Counter] | None = None,
    identity: IdentityOptions | None = None,
    attribution: Attribution | None = None,
    nvml: Nvml | None = None,
    **sources: object,
) -> Collector:
    """A collector with every NVML-side source (XIDs, licences, GPM) over `nvml`, or else `fake:<profile>`."""
    node = nvml or open_nvml(f"fake:{profile}")
    library = library_of(node)
    all_sources = Sources(
        node,
        xids=XidTracker(),
        licenses=None if library is None else LicenseReader(library).status,
    )
    all_sources = replace(all_sources, **sources)  # type: ignore[arg-type]
    collector = Collector(
        all_sources,
        packaged_default_counters() if counters is None else counters,
        identity or IdentityOptions(HOST),
        attribution or Attribution(),
    )
    if library is not None and "gpm" not in sources:
        all_sources.gpm = GpmWatch(library, tuple(GpmTarget(e.index, e.gpu_instance_id) for e in collector.entities))
    return collector


def parse(body: bytes) -> list[Metric]:
    return list(text_string_to_metric_families(body.decode()))


def families_of(collector: Collector, cycles: int = 2, pause: float = 0.0) -> dict[str, Metric]:
    """The families of the last of `cycles` collections (GPM needs two), `pause` seconds apart, by name."""
    body = b""
    for cycle in range(cycles):
        if cycle:
            time.sleep(pause)
        body = collector.collect().body
    return {family.name: family for family in parse(body)}
