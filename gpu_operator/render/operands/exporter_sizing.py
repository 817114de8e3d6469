"""Requests and limits of the metrics exporter, sized by the most GPUs a node of the fleet has.

dcgm-exporter's memory grows with the GPUs (and MIG instances) it watches: users report 450-500 MiB on 8-GPU
nodes, where the Helm chart's 512 MiB limit OOM-kills it on about half of them. NVIDIA's chart sets no default
at all, so the exporter is the first pod evicted under memory pressure. One DaemonSet serves every pool, so the
size follows the largest node: the pools' GPU counts, or 8 when no pool states its GPUs (a cluster we do not
create). Our agent exporter keeps its snapshot pre-rendered and measures 57.5 MiB resident on a simulated
8-GPU node with pod attribution, flat over 10,000 scrapes (`tests/bench/test_agents_bench.py`), so it gets a
fraction of that. A user's `operator.dcgmExporter.resources` replaces these (the shared operand transform).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.facts.quantity import canonical_quantity

__all__ = ["ExporterSizing", "SIZINGS", "exporter_resources", "fleet_max_gpus"]

#: GPUs assumed per node when no pool says (the largest common node).
DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class ExporterSizing:
    """Memory as a base plus a share per GPU (MiB), and the CPU request."""

    request_base_mib: int
    request_per_gpu_mib: int
    limit_base_mib: int
    limit_per_gpu_mib: int
    cpu_request: str

    def resources(self, gpus: int) -> dict[str, dict[str, str]]:
        """Requests and limits for `gpus` GPUs, spelled as the API server stores them (1024 MiB is `1Gi`)."""
        return {
            "requests": {"cpu": canonical_quantity(self.cpu_request, resource_list=True),
                         "memory": _mebibytes(self.request_base_mib + self.request_per_gpu_mib * gpus)},
            "limits": {"memory": _mebibytes(self.limit_base_mib + self.limit_per_gpu_mib * gpus)},
        }


def _mebibytes(amount: int) -> str:
    return canonical_quantity(f"{amount}Mi", resource_list=True)


#: By implementation. NVIDIA's: 8 GPUs → request 512 Mi (its reported working set), limit 1 Gi (twice that).
#: Ours: 8 GPUs → request 96 Mi, limit 192 Mi (over three times the measured 57.5 MiB).
SIZINGS: dict[str, ExporterSizing] = {
    "nvidia": ExporterSizing(256, 32, 512, 64, "100m"),
    "agents": ExporterSizing(64, 4, 128, 8, "50m"),
}


def fleet_max_gpus(config: GpuStackConfig) -> int:
    """The most GPUs a node of the config's pools has (DEFAULT_GPUS_PER_NODE when no pool states its GPUs)."""
    counts = [pool.hardware.gpu_count for pool in config.pools if pool.hardware is not None]
    return max(counts, default=DEFAULT_GPUS_PER_NODE)


def exporter_resources(config: GpuStackConfig, implementation: str) -> dict[str, dict[str, str]]:
    """The exporter container's default resources for this fleet."""
    return SIZINGS[implementation].resources(fleet_max_gpus(config))
