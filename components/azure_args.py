"""From the ARM-shaped documents the renderer produces to pulumi_azure_native constructor arguments.

The renderer speaks the AKS REST API (`osSKU`, `vnetSubnetID`, `gpuProfile.driver`); the Python SDK takes the
same values as snake_case keywords and typed argument classes. The mapping is a table per resource, so a property
the renderer starts emitting without a mapping here fails loudly (KeyError) instead of being dropped.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

from pulumi_azure_native import containerservice

__all__ = ["agent_pool_args", "managed_cluster_args"]

#: Agent pool `properties` key → AgentPool keyword (scalars and lists pass through unchanged).
_AGENT_POOL_SCALARS = {
    "count": "count",
    "enableAutoScaling": "enable_auto_scaling",
    "minCount": "min_count",
    "maxCount": "max_count",
    "vmSize": "vm_size",
    "osType": "os_type",
    "osSKU": "os_sku",
    "mode": "mode",
    "type": "type",
    "orchestratorVersion": "orchestrator_version",
    "scaleDownMode": "scale_down_mode",
    "availabilityZones": "availability_zones",
    "vnetSubnetID": "vnet_subnet_id",
    "osDiskSizeGB": "os_disk_size_gb",
    "osDiskType": "os_disk_type",
    "nodeLabels": "node_labels",
    "nodeTaints": "node_taints",
    "tags": "tags",
}
_UPGRADE_SETTINGS = {
    "maxSurge": "max_surge",
    "drainTimeoutInMinutes": "drain_timeout_in_minutes",
    "nodeSoakDurationInMinutes": "node_soak_duration_in_minutes",
}
#: System pool profile key → ManagedClusterAgentPoolProfileArgs keyword.
_POOL_PROFILE = {
    "name": "name",
    "mode": "mode",
    "count": "count",
    "vmSize": "vm_size",
    "osType": "os_type",
    "osSKU": "os_sku",
    "type": "type",
    "availabilityZones": "availability_zones",
}


def agent_pool_args(properties: Mapping[str, Any]) -> dict[str, Any]:
    """AgentPool keywords for agent pool `properties` (cluster, resource group and pool name not included)."""
    kwargs: dict[str, Any] = {}
    for key, value in properties.items():
        if key == "gpuProfile":
            kwargs["gpu_profile"] = containerservice.GPUProfileArgs(driver=value["driver"])
        elif key == "upgradeSettings":
            kwargs["upgrade_settings"] = containerservice.AgentPoolUpgradeSettingsArgs(
                **{_UPGRADE_SETTINGS[k]: v for k, v in value.items()}
            )
        else:
            kwargs[_AGENT_POOL_SCALARS[key]] = value
    return kwargs


def managed_cluster_args(resource: Mapping[str, Any]) -> dict[str, Any]:
    """ManagedCluster keywords for a rendered managed cluster resource (resource group and name not included)."""
    properties = resource["properties"]
    security = properties["securityProfile"]["workloadIdentity"]
    kwargs: dict[str, Any] = {
        "location": resource["location"],
        "identity": containerservice.ManagedClusterIdentityArgs(type=resource["identity"]["type"]),
        "dns_prefix": properties["dnsPrefix"],
        "agent_pool_profiles": [
            containerservice.ManagedClusterAgentPoolProfileArgs(**{_POOL_PROFILE[k]: v for k, v in profile.items()})
            for profile in properties["agentPoolProfiles"]
        ],
        "oidc_issuer_profile": containerservice.ManagedClusterOIDCIssuerProfileArgs(
            enabled=properties["oidcIssuerProfile"]["enabled"]
        ),
        "security_profile": containerservice.ManagedClusterSecurityProfileArgs(
            workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(
                enabled=security["enabled"]
            )
        ),
    }
    if "kubernetesVersion" in properties:
        kwargs["kubernetes_version"] = properties["kubernetesVersion"]
    if "tags" in resource:
        kwargs["tags"] = resource["tags"]
    return kwargs
