"""AKS agent pools as the AKS REST API spells them: the `properties` of `Microsoft.ContainerService/managedClusters/agentPools`.

Every GPU pool is a User-mode Linux pool on virtual machine scale sets:

* `gpuProfile.driver`: `None` when the GPU operator owns the driver (AKS then installs neither driver nor
  runtime setup), `Install` only when the pool chose the AKS-managed driver. The two cannot be mixed on one node,
  and the field is fixed when the pool is created (first stable API with it: 2025-02-01);
* `scaleDownMode: Delete`: with Deallocate, the operator's driver install keeps failing on nodes that come back;
* `nodeTaints` (default `sku=gpu:NoSchedule`) and `nodeLabels` (:mod:`.node_labels`);
* count or autoscaling, OS SKU, Kubernetes version, zones, subnet, OS disk, upgrade settings and tags as given
  (tags of the `aks` section first, the pool's own winning).

`properties` are plain camelCase dicts: the same document `gpu-operator render` writes as JSON and the
`GpuNodePool` component hands to the Azure provider.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.pools import GpuPool
from gpu_operator.render.aks.node_labels import pool_node_labels, pool_taints, rendered_deploy_operands
from gpu_operator.render.registry import render

__all__ = [
    "ARM_API_VERSION",
    "RESOURCE_TYPE",
    "GPU_DRIVER",
    "agent_pool_properties",
    "agent_pool_resource",
    "agent_pool_resources",
]

#: The first stable AKS API version that carries `gpuProfile`; every property below exists in it.
ARM_API_VERSION = "2025-02-01"
RESOURCE_TYPE = "Microsoft.ContainerService/managedClusters/agentPools"
#: Who installs the GPU driver → the value of `gpuProfile.driver`.
GPU_DRIVER = {"operator": "None", "aks": "Install"}


def _scaling(pool: GpuPool) -> dict[str, Any]:
    if pool.autoscale is None:
        return {"count": pool.initial_count, "enableAutoScaling": False}
    return {
        "count": pool.initial_count,
        "enableAutoScaling": True,
        "minCount": pool.autoscale.min_count,
        "maxCount": pool.autoscale.max_count,
    }


def _optional(pool: GpuPool, config: GpuStackConfig) -> dict[str, Any]:
    aks_tags = config.aks.tags if config.aks is not None else {}
    upgrade = pool.upgrade_settings.to_document() if pool.upgrade_settings is not None else {}
    values = {
        "orchestratorVersion": pool.orchestrator_version,
        "availabilityZones": list(pool.availability_zones),
        "vnetSubnetID": pool.vnet_subnet_id,
        "osDiskSizeGB": pool.os_disk_size_gb,
        "osDiskType": pool.os_disk_type,
        "upgradeSettings": upgrade,
        "tags": {**aks_tags, **pool.tags},
    }
    return {key: value for key, value in values.items() if value not in (None, [], {})}


def agent_pool_properties(
    pool: GpuPool, config: GpuStackConfig, rendered: frozenset[str] | None = None
) -> dict[str, Any]:
    """The agent pool's ARM `properties`; `rendered` (the operands' deploy labels) is computed when not given."""
    if rendered is None:
        rendered = rendered_deploy_operands(render(config))
    return {
        **_scaling(pool),
        "vmSize": pool.vm_size,
        "osType": "Linux",
        "osSKU": pool.os_sku,
        "mode": "User",
        "type": "VirtualMachineScaleSets",
        "scaleDownMode": "Delete",
        "gpuProfile": {"driver": GPU_DRIVER[pool.gpu_driver]},
        "nodeTaints": pool_taints(pool),
        "nodeLabels": dict(sorted(pool_node_labels(pool, config, rendered).items())),
        **_optional(pool, config),
    }


def agent_pool_resource(pool: GpuPool, config: GpuStackConfig, rendered: frozenset[str] | None = None) -> dict[str, Any]:
    """The pool as an ARM resource: type, API version, `<cluster>/<pool>` name and properties."""
    cluster = config.aks.cluster_name if config.aks is not None else ""
    return {
        "type": RESOURCE_TYPE,
        "apiVersion": ARM_API_VERSION,
        "name": f"{cluster}/{pool.name}",
        "properties": agent_pool_properties(pool, config, rendered),
    }


def agent_pool_resources(config: GpuStackConfig) -> list[dict[str, Any]]:
    """Every pool of the config as an ARM resource, in the config's order (the operands are rendered once)."""
    rendered = rendered_deploy_operands(render(config))
    return [agent_pool_resource(pool, config, rendered) for pool in config.pools]
