"""A cluster the stack creates, as the AKS REST API spells it."""

from __future__ import annotations

from gpu_operator.config import parse_config
from gpu_operator.render.aks.managed_cluster import RESOURCE_TYPE, managed_cluster_resource

CREATED = {"resourceGroup": "rg-gpu", "clusterName": "aks_gpu", "create": True, "location": "westeurope"}


def resource(**aks: object) -> dict:
    config = parse_config({"aks": {**CREATED, **aks}})
    assert config.aks is not None
    return managed_cluster_resource(config.aks)


def test_cluster_with_system_pool_oidc_and_workload_identity() -> None:
    cluster = resource(kubernetesVersion="1.34", tags={"env": "dev"})
    assert cluster["type"] == RESOURCE_TYPE
    assert (cluster["name"], cluster["location"]) == ("aks_gpu", "westeurope")
    assert cluster["identity"] == {"type": "SystemAssigned"}
    assert cluster["tags"] == {"env": "dev"}
    props = cluster["properties"]
    assert props["dnsPrefix"] == "aks-gpu"
    assert props["kubernetesVersion"] == "1.34"
    assert props["oidcIssuerProfile"] == {"enabled": True}
    assert props["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert props["agentPoolProfiles"] == [{
        "name": "system", "mode": "System", "count": 2, "vmSize": "Standard_D4ds_v5", "osType": "Linux",
        "osSKU": "Ubuntu", "type": "VirtualMachineScaleSets",
    }]


def test_optional_parts() -> None:
    cluster = resource(systemPool={"name": "sys", "count": 3, "availabilityZones": [1, 2, 3]}, dnsPrefix="gpu")
    assert "tags" not in cluster and "kubernetesVersion" not in cluster["properties"]
    assert cluster["properties"]["dnsPrefix"] == "gpu"
    profile = cluster["properties"]["agentPoolProfiles"][0]
    assert (profile["name"], profile["count"], profile["availabilityZones"]) == ("sys", 3, ["1", "2", "3"])
