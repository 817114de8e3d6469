"""The ARM-to-SDK argument tables: every property the renderer emits reaches Azure under its ARM name."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest
from pulumi_azure_native import containerservice

from gpu_operator.components.azure_args import agent_pool_args, managed_cluster_args
from gpu_operator.config import parse_config
from gpu_operator.render.aks.agent_pool import agent_pool_properties
from gpu_operator.render.aks.managed_cluster import managed_cluster_resource
from tests.support.azure_mocks import run_azure_program

SUBNET = ("/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590/resourceGroups/rg-net/providers/"
          "Microsoft.Network/virtualNetworks/vnet-gpu/subnets/gpu")
EVERY_OPTION = {
    "name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2,
    "autoscale": {"minCount": 1, "maxCount": 4}, "orchestratorVersion": "1.34", "osSKU": "Ubuntu2204",
    "availabilityZones": ["1"], "vnetSubnetID": SUBNET, "osDiskSizeGB": 512, "osDiskType": "Ephemeral",
    "upgradeSettings": {"maxSurge": "1", "drainTimeoutInMinutes": 60, "nodeSoakDurationInMinutes": 5},
    "tags": {"workload": "training"}, "labels": {"team": "ml"},
}
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34", "create": True,
       "location": "westeurope", "tags": {"env": "prod"}, "systemPool": {"availabilityZones": ["1", "2"]}}


def _plain(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_every_agent_pool_property_reaches_the_engine_under_its_arm_name() -> None:
    config = parse_config({"aks": AKS, "pools": [EVERY_OPTION]})
    properties = agent_pool_properties(config.pools[0], config)

    def program() -> None:
        containerservice.AgentPool(
            "pool", resource_group_name="rg-gpu", resource_name_="aks-gpu", agent_pool_name="h100",
            **agent_pool_args(properties),
            opts=pulumi.ResourceOptions(provider=azure_native.Provider("azure")),
        )

    recorded = run_azure_program(program).of_type("azure-native:containerservice:AgentPool")[0].inputs
    for identity in ("resourceGroupName", "resourceName", "agentPoolName"):
        recorded.pop(identity)
    assert _plain(recorded) == properties


def test_every_managed_cluster_property_reaches_the_engine_under_its_arm_name() -> None:
    config = parse_config({"aks": AKS})
    assert config.aks is not None
    resource = managed_cluster_resource(config.aks)

    def program() -> None:
        containerservice.ManagedCluster(
            "cluster", resource_group_name="rg-gpu", resource_name_="aks-gpu", **managed_cluster_args(resource),
            opts=pulumi.ResourceOptions(provider=azure_native.Provider("azure")),
        )

    recorded = run_azure_program(program).of_type("azure-native:containerservice:ManagedCluster")[0].inputs
    assert _plain(recorded) == {
        "resourceGroupName": "rg-gpu", "resourceName": "aks-gpu", "location": "westeurope",
        "identity": resource["identity"], "tags": resource["tags"], **resource["properties"],
    }


def test_an_unmapped_property_fails_loudly() -> None:
    with pytest.raises(KeyError):
        agent_pool_args({"enableFIPS": True})
