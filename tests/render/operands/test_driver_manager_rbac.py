"""The driver's ClusterRole follows whose driver manager runs in the pod: NVIDIA's rules for NVIDIA's program,
exactly the requests of ours (gpu_operator/agents/driver_manager/kube.py) for our agent.

Operand tests see every agent as shipped (conftest.py), so `with_agents()` picks ours, as it will once ours ships.
tests/e2e/test_driver_manager.py runs the agent with a token bound to these rules.
"""

from __future__ import annotations

import pytest

from gpu_operator.render.operands import driver
from tests.render.operands.helpers import container, find, pod_of, render_operand
from tests.support.agents import with_agents

NVIDIA_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "update", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list"]},
]
AGENT_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    # a pod holding an NVIDIA DRA claim is a GPU pod (k8s-driver-manager v0.12.0 `podHasGPUResourceClaim`): the
    # claims are read one by one (get), never listed
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
]


def _init(objects: list[dict]) -> dict:
    return container(find(objects, "DaemonSet", driver.DAEMONSET), "k8s-driver-manager")


@pytest.mark.parametrize("document", [{}, with_agents(overrides={"driverManager": "nvidia"})])
def test_nvidias_driver_manager_gets_nvidias_rules(document: dict) -> None:
    objects = render_operand(driver.render, document)
    assert _init(objects)["command"] == ["driver-manager"]
    assert find(objects, "ClusterRole", driver.NAME)["rules"] == NVIDIA_RULES


def test_our_driver_manager_gets_only_what_it_calls() -> None:
    objects = render_operand(driver.render, with_agents())
    init = _init(objects)
    assert (init["command"], init["args"]) == (["gpu-operator-agent", "driver-manager"], ["uninstall_driver"])
    assert find(objects, "ClusterRole", driver.NAME)["rules"] == AGENT_RULES
    binding = find(objects, "ClusterRoleBinding", driver.NAME)
    assert binding["subjects"][0]["name"] == pod_of(find(objects, "DaemonSet", driver.DAEMONSET))["serviceAccountName"]
