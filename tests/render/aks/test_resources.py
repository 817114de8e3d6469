"""The extended resources a fleet advertises: the operator's, plus the MIG profiles the pools fix (mixed)."""

from __future__ import annotations

from typing import Any

from gpu_operator.config import parse_config
from gpu_operator.render.aks.resources import fleet_gpu_resource_names, mig_resource_name

AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"}


def _names(pools: list[dict[str, Any]], strategy: str) -> list[str]:
    return fleet_gpu_resource_names(parse_config({"aks": AKS, "pools": pools,
                                                  "operator": {"mig": {"strategy": strategy}}}))


def test_mixed_strategy_adds_each_pools_profiles_once() -> None:
    pools = [
        {"name": "a", "vmSize": "Standard_ND96isr_H100_v5", "migConfig": "all-1g.10gb"},
        {"name": "b", "vmSize": "Standard_ND96isr_H100_v5", "migConfig": "all-1g.10gb"},
        {"name": "c", "vmSize": "Standard_NC24ads_A100_v4", "migConfig": "all-3g.40gb"},
        {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"},
    ]
    assert _names(pools, "mixed") == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]


def test_single_strategy_advertises_mig_devices_as_gpus() -> None:
    pools = [{"name": "a", "vmSize": "Standard_ND96isr_H100_v5", "migConfig": "all-1g.10gb"}]
    assert _names(pools, "single") == ["nvidia.com/gpu"]


def test_profile_names() -> None:
    assert mig_resource_name("1g.10gb") == "nvidia.com/mig-1g.10gb"
    assert mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
