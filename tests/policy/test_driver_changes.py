"""`driver-changes-reach-nodes`: a driver change reaches the nodes, through the operator controller in production.

Judged on the rendered objects alone (the driver DaemonSets by NVIDIA's component label, the controller by its
Deployment), so `gpu-operator check` and the CrossGuard pack judge the same thing."""

from __future__ import annotations

from gpu_operator.config import parse_config
from gpu_operator.policy import PolicyContext
from gpu_operator.policy.catalog import POLICIES
from gpu_operator.render import render
from tests.support.agents import with_agents

[POLICY] = [policy for policy in POLICIES if policy.name == "driver-changes-reach-nodes"]
MANUAL = {"operator": {"driver": {"upgradePolicy": {"autoUpgrade": False}}}}
POOLS = {"aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"},
         "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "driver": {"version": "580.105.08"}},
                   {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}]}


def _violations(document: dict, production: bool = False) -> list[str]:
    objects = render(parse_config(document))
    return [v.resource for v in POLICY.evaluate(objects, PolicyContext(production=production))]


def test_an_on_delete_driver_without_the_controller_never_changes() -> None:
    assert _violations(MANUAL) == ["DaemonSet gpu-operator/nvidia-driver-daemonset"]
    assert _violations(with_agents(MANUAL)) == []  # the controller replaces the pods (autoUpgrade on there)


def test_in_production_the_drivers_roll_through_the_controller() -> None:
    assert _violations({}) == []  # the default: the DaemonSet rolls a new driver itself
    rolling = _violations(POOLS, production=True)
    assert "DaemonSet gpu-operator/nvidia-driver-daemonset" in rolling and len(rolling) == 2  # a pool's own too
    assert _violations(with_agents(POOLS), production=True) == []
