"""A GPU pool's agent pool properties, as the AKS REST API spells them."""

from __future__ import annotations

import json

from gpu_operator.render.aks.agent_pool import (
    ARM_API_VERSION,
    RESOURCE_TYPE,
    agent_pool_properties,
    agent_pool_resource,
    agent_pool_resources,
)
from tests.render.aks.helpers import AKS, H100, T4, with_pools

SUBNET = ("/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590/resourceGroups/rg-net/providers/"
          "Microsoft.Network/virtualNetworks/vnet-gpu/subnets/gpu")


def properties(pool: dict, **sections: object) -> dict:
    config = with_pools(pool, **sections)  # type: ignore[arg-type]
    return agent_pool_properties(config.pools[0], config)


def test_operator_owned_driver_pool() -> None:
    props = properties({**H100, "count": 2})
    assert props["gpuProfile"] == {"driver": "None"}
    assert props["mode"] == "User"
    assert props["osType"] == "Linux"
    assert props["osSKU"] == "Ubuntu"
    assert props["type"] == "VirtualMachineScaleSets"
    assert props["scaleDownMode"] == "Delete"
    assert props["vmSize"] == "Standard_ND96isr_H100_v5"
    assert (props["count"], props["enableAutoScaling"]) == (2, False)
    assert "minCount" not in props and "maxCount" not in props
    assert props["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert props["nodeLabels"]["nvidia.com/gpu.present"] == "true"
    assert props["nodeLabels"]["nvidia.com/gpu.deploy.driver"] == "true"
    assert list(props["nodeLabels"]) == sorted(props["nodeLabels"])


def test_aks_managed_driver_pool_installs_the_driver() -> None:
    operator = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}
    assert properties({**T4, "gpuDriver": "aks"}, operator=operator)["gpuProfile"] == {"driver": "Install"}


def test_autoscaling() -> None:
    props = properties({**T4, "autoscale": {"minCount": 0, "maxCount": 3}})
    assert {k: props[k] for k in ("count", "enableAutoScaling", "minCount", "maxCount")} == {
        "count": 0, "enableAutoScaling": True, "minCount": 0, "maxCount": 3,
    }
    assert properties({**T4, "count": 2, "autoscale": {"minCount": 1, "maxCount": 3}})["count"] == 2


def test_optional_properties_only_when_given() -> None:
    plain = properties(T4)
    for key in ("orchestratorVersion", "availabilityZones", "vnetSubnetID", "osDiskSizeGB", "osDiskType",
                "upgradeSettings", "tags"):
        assert key not in plain
    full = properties({
        **T4,
        "orchestratorVersion": "1.33",
        "availabilityZones": ["1", "2"],
        "vnetSubnetID": SUBNET,
        "osDiskSizeGB": 256,
        "osDiskType": "Ephemeral",
        "osSKU": "Ubuntu2204",
        "upgradeSettings": {"maxSurge": "1", "drainTimeoutInMinutes": 60, "nodeSoakDurationInMinutes": 5},
        "tags": {"workload": "training"},
    })
    assert full["orchestratorVersion"] == "1.33"
    assert full["availabilityZones"] == ["1", "2"]
    assert full["vnetSubnetID"] == SUBNET
    assert (full["osDiskSizeGB"], full["osDiskType"], full["osSKU"]) == (256, "Ephemeral", "Ubuntu2204")
    assert full["upgradeSettings"] == {"maxSurge": "1", "drainTimeoutInMinutes": 60, "nodeSoakDurationInMinutes": 5}
    assert full["tags"] == {"workload": "training"}


def test_cluster_tags_come_first_and_the_pools_win() -> None:
    config = with_pools({**T4, "tags": {"owner": "ml"}}, aks={**AKS, "tags": {"owner": "platform", "env": "prod"}})
    assert agent_pool_properties(config.pools[0], config)["tags"] == {"owner": "ml", "env": "prod"}


def test_custom_taints_replace_the_default() -> None:
    assert properties({**T4, "taints": ["dedicated=ml:NoExecute"]})["nodeTaints"] == ["dedicated=ml:NoExecute"]


def test_resource_form_and_api_version() -> None:
    config = with_pools(H100, T4)
    resource = agent_pool_resource(config.pools[1], config)
    assert resource["type"] == RESOURCE_TYPE == "Microsoft.ContainerService/managedClusters/agentPools"
    assert resource["apiVersion"] == ARM_API_VERSION == "2025-02-01"
    assert resource["name"] == "aks-gpu/t4"
    assert resource["properties"] == agent_pool_properties(config.pools[1], config)
    assert [r["name"] for r in agent_pool_resources(config)] == ["aks-gpu/h100", "aks-gpu/t4"]


def test_properties_are_plain_json() -> None:
    config = with_pools({**H100, "upgradeSettings": {"maxSurge": "10%"}, "availabilityZones": [1]})
    text = json.dumps(agent_pool_resources(config))
    assert json.loads(text) == agent_pool_resources(config)
