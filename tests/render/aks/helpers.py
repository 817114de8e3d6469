"""Config documents with AKS GPU pools for the render tests."""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig, parse_config

__all__ = ["AKS", "H100", "T4", "A100", "with_pools"]

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}
T4 = {"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}
A100 = {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}


def with_pools(*pools: dict[str, Any], aks: dict[str, Any] | None = None, **sections: Any) -> GpuStackConfig:
    return parse_config({"aks": aks if aks is not None else AKS, "pools": list(pools), **sections})
