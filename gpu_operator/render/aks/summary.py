"""One summary row per GPU pool, for `gpu-operator render --summary`."""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.pools import GpuPool
from gpu_operator.render.aks.node_labels import pool_mig_config

__all__ = ["POOL_HEADER", "pool_summary_rows"]

POOL_HEADER = (
    "POOL", "VM SIZE", "NODES", "GPUS PER NODE", "DRIVER", "GPUS ALLOCATED BY", "INFINIBAND", "MIG CONFIG", "TAINTS"
)
#: How a pool's GPUs reach pods (`gpuAllocation`): counted extended resources, or DRA claims.
_ALLOCATION = {"devicePlugin": "device plugin", "dra": "DRA"}


def _nodes(pool: GpuPool) -> str:
    scale = pool.autoscale
    if scale is None:
        return str(pool.initial_count)
    return f"{scale.min_count}..{scale.max_count} (starts at {pool.initial_count})"


def _gpus(pool: GpuPool) -> str:
    hardware = pool.hardware
    return f"{hardware.gpu_count}x {hardware.gpu.model} {hardware.gpu.memory_gib}GiB" if hardware else "-"


def _infiniband(pool: GpuPool) -> str:
    ib = pool.hardware.infiniband if pool.hardware else None
    return f"{ib.nics}x {ib.rate_gbps} Gb/s" if ib else "-"


def pool_summary_rows(config: GpuStackConfig) -> list[tuple[str, ...]]:
    """(pool, VM size, nodes, GPUs per node, driver owner, GPU allocation, InfiniBand, MIG config, taints) per pool.

    The allocation is the pool's `gpuAllocation`: the device plugin (`nvidia.com/gpu` and MIG resources) or NVIDIA's
    DRA driver (ResourceClaims); the MIG config is the layout the nodes start with (`migManager.config.default`
    unless the pool names one)."""
    return [
        (
            pool.name,
            pool.vm_size,
            _nodes(pool),
            _gpus(pool),
            "GPU operator" if pool.gpu_driver == "operator" else "AKS",
            _ALLOCATION[pool.gpu_allocation],
            _infiniband(pool),
            pool_mig_config(pool, config) or "-",
            ", ".join(pool.taints) or "-",
        )
        for pool in config.pools
    ]
