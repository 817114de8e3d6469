"""GPU sharing bounds, each accepted at its edge and refused one past it.

* Time-slicing and MPS replicas start at 2: k8s-device-plugin v0.20.0 api/config/v1 replicas.go
  (`ReplicatedResource.UnmarshalJSON`: "number of replicas must be >= 2").
* Time-slicing ends at 250 replicas per GPU: each replica is a device for one pod, and AKS runs at most 250 pods
  on a node (`maxPods`).
* MPS ends at 48 clients per GPU: cmd/mps-control-daemon/mps/device.go (`mpsDevice.maxClients`: 48 on Volta
  and newer, `assertReplicas`: "maximum allowed replicas exceeded").
* A DRA claim's MPS `defaultActiveThreadPercentage` is a percentage, 0 to 100.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.device_plugin import MAX_MPS_REPLICAS, MAX_TIME_SLICING_REPLICAS

SHARING_PATH = "configs.devicePlugin.a.sharing"


def sharing(strategy: str, replicas: int) -> dict[str, Any]:
    return {"operator": {"devicePlugin": {"config": {"name": "dp", "default": "a"}}, "mig": {"strategy": "single"}},
            "configs": {"devicePlugin": {"a": {"sharing": {strategy: {"resources": [
                {"name": "nvidia.com/gpu", "replicas": replicas}]}}}}}}


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    return {p.path: p.message for p in caught.value.problems}


def test_the_bounds_are_nvidias_and_akss_numbers() -> None:
    assert (MAX_TIME_SLICING_REPLICAS, MAX_MPS_REPLICAS) == (250, 48)


@pytest.mark.parametrize(("strategy", "replicas"), [("timeSlicing", 2), ("timeSlicing", 250), ("mps", 2),
                                                    ("mps", 48)])
def test_replicas_at_the_edges_are_accepted(strategy: str, replicas: int) -> None:
    configs = parse_config(sharing(strategy, replicas)).configs.device_plugin
    assert configs is not None and configs["a"].sharing is not None
    shared = configs["a"].sharing.time_slicing or configs["a"].sharing.mps
    assert shared is not None and shared.resources[0].replicas == replicas


@pytest.mark.parametrize("strategy", ["timeSlicing", "mps"])
def test_one_replica_is_refused(strategy: str) -> None:
    path = f"{SHARING_PATH}.{strategy}.resources[0].replicas"
    assert problems(sharing(strategy, 1))[path] == (
        "replicas must be at least 2 (got 1); a GPU with one replica is not shared")


def test_251_time_slicing_replicas_are_refused() -> None:
    path = f"{SHARING_PATH}.timeSlicing.resources[0].replicas"
    assert problems(sharing("timeSlicing", 251))[path].startswith("must be at most 250 (got 251): each replica is")


def test_49_mps_clients_are_refused() -> None:
    assert problems(sharing("mps", 49))[SHARING_PATH] == (
        "mps: nvidia.com/gpu replicas must be at most 48 (got 49), the clients one MPS server takes: lower "
        "replicas, or use timeSlicing")


def dra_mps(percentage: int) -> dict[str, Any]:
    sharing_config = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": percentage}}
    parameters = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing_config}
    template = {"name": "mps", "namespace": "dra-driver-nvidia-gpu", "spec": {"devices": {
        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
        "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": parameters}}]}}}
    return {"aks": {"resourceGroup": "rg", "clusterName": "c", "kubernetesVersion": "1.34"},
            "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"}],
            "network": {"enabled": False},
            "dra": {"values": {"featureGates": {"MPSSupport": True}}, "claimTemplates": [template]}}


@pytest.mark.parametrize("percentage", [0, 100])
def test_an_mps_thread_percentage_from_0_to_100_is_accepted(percentage: int) -> None:
    parse_config(dra_mps(percentage))


@pytest.mark.parametrize(("percentage", "why"), [(101, "less than or equal to 100"),
                                                 (-1, "greater than or equal to 0")])
def test_an_mps_thread_percentage_past_0_or_100_is_refused(percentage: int, why: str) -> None:
    path = ("dra.claimTemplates[0].spec.devices.config[0].opaque.parameters.sharing.mpsConfig."
            "defaultActiveThreadPercentage")
    assert why in problems(dra_mps(percentage))[path]
