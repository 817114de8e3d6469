"""Which OS a render assumes the GPU nodes run when nothing says: told, not taken silently.

NVIDIA's driver image is built per node OS (`driver:<version>-ubuntu22.04`) and its operator reads the OS from
each node's NFD labels; a render cannot, so the OS comes from the pools (their node image) or from
`cluster.operatingSystems`. A config with neither gets the default, Ubuntu 22.04, and the render says so: a node
running another OS would pull a driver image built for the wrong one, or one that does not exist.
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig

__all__ = ["assumed_os_notes"]


def _needs_node_os(config: GpuStackConfig) -> bool:
    operator = config.operator
    return operator.driver.enabled or operator.sandbox_workloads.enabled and operator.vgpu_manager.enabled


def assumed_os_notes(config: GpuStackConfig) -> list[str]:
    """A note when the driver image's OS is the default because neither pools nor the cluster facts give one."""
    if config.pools or "operating_systems" in config.cluster.model_fields_set or not _needs_node_os(config):
        return []
    systems = ", ".join(f"{os.id} {os.version_id}" for os in config.cluster.operating_systems)
    return [f"no pools and no cluster.operatingSystems: the driver image is built for the default node OS, {systems}; "
            "if your GPU nodes run another, list it (cluster.operatingSystems: [{id: ubuntu, versionId: '24.04'}])"]
