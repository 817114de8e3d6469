"""GpuLost: a node that reports fewer GPUs than its pool's VM size has.

A GPU that falls off the bus (XID 79), or that the driver no longer enumerates after a reboot, leaves the metrics
exporter: DCGM reads blank values for it and dcgm-exporter skips blank values, so its series end. The alert counts
the distinct GPUs (`UUID`s) each node reports and compares them with what the node should have, the GPU count of
its pool (`pools[].vmSize` in the VM size catalog, or the pool's declared `gpu.count`). Comparing with that
constant, not with the node's own past, keeps the alert firing for as long as the GPU is gone, reboots included.
Counting UUIDs, not series, keeps the count right where one GPU has several series: its MIG instances
(dcgm-exporter labels each instance's series with the parent GPU's UUID), pods sharing it (a series per pod with
pod attribution), or one exporter scraped by two jobs.

A node's pool is read from its name: AKS names a pool's nodes `aks-<pool>-<id>-vmss<instance>`, and a pool name
has no `-`, so `aks-<pool>-` is that pool's alone. Nodes of pools the config does not describe are not judged, nor
is a node that reports no GPU at all (scaled down, reimaged, or its exporter restarting; GpuMetricsExporterDown
covers an exporter that stays down). Pools that hand their GPUs to virtual machines (`workload: vm-passthrough` or
`vm-vgpu`) run no metrics exporter and are left out. Each firing node carries its `pool` and `pool_gpus`.
"""

from __future__ import annotations

from gpu_operator.config.document import GpuStackConfig

__all__ = ["PRESENCE_METRIC", "gpus_below_pool", "pool_node_regex"]

#: The field every GPU reports while it is there (in every default collectors list).
PRESENCE_METRIC = "DCGM_FI_DEV_GPU_TEMP"


def pool_node_regex(pool: str) -> str:
    """The names AKS gives the nodes of agent pool `pool` (a PromQL regex, anchored by Prometheus)."""
    return f"aks-{pool}-.+"


def _below_pool(pool: str, gpus: int) -> str:
    reporting = (f'count by (hostname) (count by (hostname, UUID) '
                 f'({PRESENCE_METRIC}{{hostname=~"{pool_node_regex(pool)}"}}))')
    labelled = f'label_replace({reporting} < {gpus}, "pool", "{pool}", "", "")'
    return f'label_replace({labelled}, "pool_gpus", "{gpus}", "", "")'


def gpus_below_pool(config: GpuStackConfig) -> str | None:
    """The nodes reporting fewer GPUs than their pool has, valued at the GPUs they report (None without pools)."""
    branches = [_below_pool(pool.name, hardware.gpu_count) for pool in config.pools
                if pool.workload == "container" and (hardware := pool.hardware) is not None]
    return " or ".join(branches) or None
