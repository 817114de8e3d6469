"""The extended resources GPU pools advertise: what a workload on the fleet can request.

Besides what the operator's config fixes (`nvidia.com/gpu`, shared names; see
:func:`~gpu_operator.render.workload_facts.gpu_resource_names`), a pool's `migConfig` fixes the MIG profiles its
nodes are partitioned into. With the `mixed` strategy the device plugin advertises each profile as its own
resource (`nvidia.com/mig-1g.10gb`; `+me` profiles as `.me`); with `single` they stay `nvidia.com/gpu`.
Pools with `gpuAllocation: dra` advertise no extended resource: their GPUs are claimed through DRA.
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.pool_checks import mig_config_profiles
from gpu_operator.render.workload_facts import gpu_resource_names

__all__ = ["fleet_gpu_resource_names", "mig_resource_name"]


def mig_resource_name(profile: str) -> str:
    """The mixed-strategy resource name of a MIG profile (`1g.10gb+me` → `nvidia.com/mig-1g.10gb.me`)."""
    return f"nvidia.com/mig-{profile.replace('+', '.')}"


def _pool_mig_profiles(config: GpuStackConfig) -> list[str]:
    profiles: set[str] = set()
    for pool in config.pools:
        hardware = pool.hardware
        if pool.mig_config is None or hardware is None or pool.gpu_allocation == "dra":
            continue
        configs = mig_config_profiles(config, hardware.gpu) or {}
        profiles |= configs.get(pool.mig_config, frozenset())
    return sorted(profiles)


def fleet_gpu_resource_names(config: GpuStackConfig) -> list[str]:
    """Every extended resource the fleet's GPU nodes advertise: the operator's, then the pools' MIG profiles."""
    if config.pools and all(pool.gpu_allocation == "dra" for pool in config.pools):
        return []
    names = gpu_resource_names(config)
    if names and config.operator.mig.strategy == "mixed":
        names += [mig_resource_name(profile) for profile in _pool_mig_profiles(config)]
    return list(dict.fromkeys(names))
