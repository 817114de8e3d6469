"""The `pools` and `aks` sections: what a pool definition may say, field by field, and what it resolves to."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.aks.vm_sizes import VM_SIZES
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.node_metadata import Taint

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}


def document(pool: dict[str, Any] | None = None, **aks: Any) -> dict[str, Any]:
    return {"aks": {**AKS, **aks}, "pools": [pool if pool is not None else H100]}


def problems(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(doc)
    return {p.path: p.message for p in caught.value.problems}


# (failing pool, path of its problem, a word of the message)
FIELD_CASES: list[tuple[dict[str, Any], str, str]] = [
    ({**H100, "name": "h100trainingpool"}, "pools[0].name", "1 to 12"),
    ({**H100, "name": "H100"}, "pools[0].name", "lower-case"),
    ({**H100, "name": "1h100"}, "pools[0].name", "starting with a letter"),
    ({**H100, "name": "h100-a"}, "pools[0].name", "AKS pool name"),
    ({**H100, "autoscale": {"minCount": 3, "maxCount": 2}}, "pools[0].autoscale", "greater than maxCount"),
    ({**H100, "autoscale": {"minCount": 0, "maxCount": 1001}}, "pools[0].autoscale.maxCount", "1000"),
    ({**H100, "count": -1}, "pools[0].count", "greater than or equal to 0"),
    ({**H100, "taints": ["sku=gpu"]}, "pools[0].taints", "must end in"),
    ({**H100, "taints": ["sku=gpu:NoSchedule", "sku=cpu:NoSchedule"]}, "pools[0].taints", "listed twice"),
    ({**H100, "taints": ["bad key=x:NoSchedule"]}, "pools[0].taints", "label key"),
    ({**H100, "labels": {"nvidia.com/mig.config": "all-1g.10gb"}}, "pools[0].labels", "migConfig"),
    ({**H100, "labels": {"nvidia.com/gpu.deploy.driver": "false"}}, "pools[0].labels", "derived"),
    ({**H100, "labels": {"kubernetes.azure.com/mode": "user"}}, "pools[0].labels", "set by AKS"),
    ({**H100, "labels": {"team": "a b"}}, "pools[0].labels", "label value"),
    ({**H100, "availabilityZones": ["4"]}, "pools[0].availabilityZones[0]", "'1', '2' or '3'"),
    ({**H100, "vnetSubnetID": "subnet-gpu"}, "pools[0].vnetSubnetID", "subnet resource id"),
    ({**H100, "orchestratorVersion": "v1.34"}, "pools[0].orchestratorVersion", "Kubernetes version"),
    ({**H100, "osSKU": "AzureLinux"}, "pools[0].osSKU", "Ubuntu"),
    ({**H100, "gpuDriver": "none"}, "pools[0].gpuDriver", "'operator' or 'aks'"),
    ({**H100, "upgradeSettings": {"maxSurge": "one"}}, "pools[0].upgradeSettings.maxSurge", "must be a number of pool's nodes such as 1"),
    ({**H100, "upgradeSettings": {"nodeSoakDurationInMinutes": 31}}, "pools[0].upgradeSettings.nodeSoakDurationInMinutes", "30"),
    ({**H100, "gpu": {"model": "X", "count": 1, "memoryGiB": 8, "pciDeviceId": "2330h"}}, "pools[0].gpu.pciDeviceId", "PCI"),
    ({**H100, "gpu": {"model": "X", "count": 0, "memoryGiB": 8}}, "pools[0].gpu.count", "greater than or equal to 1"),
    ({**H100, "gpu": {"model": "X", "count": 1, "memoryGiB": 8, "infiniband": {"nics": 1, "rateGbps": 200,
                                                                             "vfDeviceId": "101X"}}},
     "pools[0].gpu.infiniband.vfDeviceId", "PCI device id"),
    ({**H100, "workload": "vm"}, "pools[0].workload", "container"),
    ({**H100, "vmsize": "Standard_ND96isr_H100_v5"}, "pools[0].vmsize", "unknown key"),
]


@pytest.mark.parametrize("pool, path, words", FIELD_CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(FIELD_CASES)])
def test_pool_field_rule(pool: dict[str, Any], path: str, words: str) -> None:
    found = problems(document(pool))
    assert path in found, found
    assert words in found[path]


# (failing aks section overrides, path, a word of the message)
AKS_CASES: list[tuple[dict[str, Any], str, str]] = [
    ({"resourceGroup": "rg gpu"}, "aks.resourceGroup", "resource group"),
    ({"clusterName": "-aks"}, "aks.clusterName", "cluster name"),
    ({"kubernetesVersion": "latest"}, "aks.kubernetesVersion", "Kubernetes version"),
    ({"dnsPrefix": "aks_gpu"}, "aks.dnsPrefix", "DNS prefix"),
    ({"create": True, "location": "westeurope", "systemPool": {"name": "System"}}, "aks.systemPool.name", "pool name"),
    ({"create": True, "location": "westeurope", "systemPool": {"count": 0}}, "aks.systemPool.count", "1"),
]


@pytest.mark.parametrize("aks, path, words", AKS_CASES, ids=[c[1] for c in AKS_CASES])
def test_aks_field_rule(aks: dict[str, Any], path: str, words: str) -> None:
    found = problems(document(**aks))
    assert path in found, found
    assert words in found[path]


def test_problems_of_several_pools_are_listed_at_once() -> None:
    doc = {"aks": AKS, "pools": [
        {**H100, "name": "H100", "autoscale": {"minCount": 3, "maxCount": 1}},
        {**H100, "name": "t4", "taints": ["x"]},
    ]}
    assert set(problems(doc)) == {"pools[0].name", "pools[0].autoscale", "pools[1].taints"}


def test_unknown_vm_size_without_gpu_facts_and_mig_on_t4_are_errors() -> None:
    found = problems({"aks": AKS, "pools": [
        {"name": "v100", "vmSize": "Standard_ND40rs_v2"},
        {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "migConfig": "all-1g.5gb"},
    ]})
    assert set(found) == {"pools[0].vmSize", "pools[1].migConfig"}
    assert "declare its GPUs under pools[0].gpu" in found["pools[0].vmSize"]
    assert "Tesla T4 GPUs do not support MIG" in found["pools[1].migConfig"]


def test_catalog_size_resolves_hardware_case_insensitively() -> None:
    pool = parse_config(document({**H100, "vmSize": "standard_nd96isr_h100_v5"})).pools[0]
    assert pool.hardware == VM_SIZES["Standard_ND96isr_H100_v5"].hardware


def test_gpu_facts_describe_an_unknown_size_and_win_over_the_catalog() -> None:
    facts = {"model": "H100-SXM5-80GB", "count": 4, "memoryGiB": 80, "pciDeviceId": "0x2330",
             "infiniband": {"nics": 4, "rateGbps": 400, "vfDeviceId": "101e"}}
    pool = parse_config(document({**H100, "gpu": facts})).pools[0]
    hardware = pool.hardware
    assert hardware is not None
    assert (hardware.gpu_count, hardware.gpu.device_id, hardware.gpu.mig_capable) == (4, 0x2330, True)
    assert hardware.infiniband is not None and hardware.infiniband.nics == 4
    assert pool.has_infiniband
    plain = parse_config(document({"name": "l4", "vmSize": "Standard_G2", "gpu": {"model": "L4", "count": 1,
                                                                                 "memoryGiB": 24}})).pools[0]
    assert plain.hardware is not None and not plain.hardware.gpu.mig_capable and not plain.has_infiniband


def test_pool_defaults() -> None:
    pool = parse_config(document()).pools[0]
    assert pool.gpu_driver == "operator"
    assert pool.os_sku == "Ubuntu"
    assert pool.taints == ("sku=gpu:NoSchedule",)
    assert pool.node_taints == (Taint("sku", "gpu", "NoSchedule"),)
    assert pool.initial_count == 1
    assert pool.workload == "container"


def test_initial_count_follows_autoscale_minimum_unless_given() -> None:
    scaled = {**H100, "autoscale": {"minCount": 2, "maxCount": 4}}
    assert parse_config(document(scaled)).pools[0].initial_count == 2
    assert parse_config(document({**scaled, "count": 3})).pools[0].initial_count == 3


def test_zones_written_as_numbers_are_strings() -> None:
    pool = parse_config(document({**H100, "availabilityZones": [1, 2]})).pools[0]
    assert pool.availability_zones == ("1", "2")


def test_aks_spellings_are_kept_for_agent_pool_fields() -> None:
    subnet = ("/subscriptions/0b1f6471-1bf0-4dda-aec3-cb9272f09590/resourceGroups/rg-net/providers/"
              "Microsoft.Network/virtualNetworks/vnet-gpu/subnets/gpu")
    pool = parse_config(document({**H100, "vnetSubnetID": subnet, "osDiskSizeGB": 256, "osSKU": "Ubuntu2204"}))
    document_back = pool.to_document()["pools"][0]
    assert document_back["vnetSubnetID"] == subnet
    assert document_back["osDiskSizeGB"] == 256
    assert document_back["osSKU"] == "Ubuntu2204"


def test_lookup_of_a_pool_by_name() -> None:
    config = parse_config(document())
    assert config.pool("h100").vm_size == "Standard_ND96isr_H100_v5"
    with pytest.raises(KeyError, match="no pool named 'a100'"):
        config.pool("a100")


def test_dns_prefix_defaults_to_a_dns_safe_cluster_name() -> None:
    aks = parse_config({"aks": {**AKS, "clusterName": "aks_gpu_prod"}}).aks
    assert aks is not None and aks.effective_dns_prefix == "aks-gpu-prod"
