"""An AKS cluster created by the stack, as the AKS REST API spells it (`Microsoft.ContainerService/managedClusters`).

Only what a GPU fleet needs and AKS does not default well: a system-assigned managed identity, a small system
pool (Ubuntu, VM scale sets) for cluster add-ons and NFD's master, the OIDC issuer and workload identity (so
in-cluster agents can reach Azure without secrets), the Kubernetes version when given, and the tags. GPU pools
are separate agent pools (:mod:`.agent_pool`), never part of the cluster resource, so they can change on their
own.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config.aks import AksSpec
from gpu_operator.render.aks.agent_pool import ARM_API_VERSION

__all__ = ["RESOURCE_TYPE", "managed_cluster_resource", "system_pool_profile"]

RESOURCE_TYPE = "Microsoft.ContainerService/managedClusters"


def system_pool_profile(aks: AksSpec) -> dict[str, Any]:
    """The `agentPoolProfiles` entry of the system pool."""
    pool = aks.system_pool
    profile: dict[str, Any] = {
        "name": pool.name,
        "mode": "System",
        "count": pool.count,
        "vmSize": pool.vm_size,
        "osType": "Linux",
        "osSKU": "Ubuntu",
        "type": "VirtualMachineScaleSets",
    }
    if pool.availability_zones:
        profile["availabilityZones"] = list(pool.availability_zones)
    return profile


def managed_cluster_resource(aks: AksSpec) -> dict[str, Any]:
    """The cluster as an ARM resource: type, API version, name, location, identity, tags and properties."""
    properties: dict[str, Any] = {"dnsPrefix": aks.effective_dns_prefix}
    if aks.kubernetes_version is not None:
        properties["kubernetesVersion"] = aks.kubernetes_version
    properties.update({
        "agentPoolProfiles": [system_pool_profile(aks)],
        "oidcIssuerProfile": {"enabled": True},
        "securityProfile": {"workloadIdentity": {"enabled": True}},
    })
    resource: dict[str, Any] = {
        "type": RESOURCE_TYPE,
        "apiVersion": ARM_API_VERSION,
        "name": aks.cluster_name,
        "location": aks.location,
        "identity": {"type": "SystemAssigned"},
    }
    if aks.tags:
        resource["tags"] = dict(aks.tags)
    resource["properties"] = properties
    return resource
