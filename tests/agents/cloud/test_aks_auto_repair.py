"""The hand-off to AKS node auto-repair follows what AKS documents it does, and nothing more.

Facts from Microsoft's "Azure Kubernetes Service (AKS) node auto-repair" (MicrosoftDocs/azure-aks-docs,
articles/aks/node-auto-repair.md): AKS acts only on a node NotReady (or silent) for minutes; it reboots, reimages,
redeploys; it skips nodes tainted `node.cloudprovider.kubernetes.io/shutdown` or `ToBeDeletedByClusterAutoscaler`
and nodes it is upgrading (two annotations); it reports each step as an `aks-auto-repair` Event.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.cloud import AKS_REPAIR_EVENTS, aks_hand_off
from gpu_operator.agents.cloud.aks_auto_repair import EVENT_SOURCE, AksRepairPhase

UPGRADING = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
             "kubernetes.azure.com/azure-cluster-autoscaler-scale-down-disabled-reason": "upgrade"}


@pytest.mark.parametrize(("configured", "ready", "taints", "annotations", "to_aks", "says"), [
    (True, False, [], {}, True, "left to AKS node auto-repair"),
    (True, False, ["nvidia.com/gpu-fault"], {}, True, "left to AKS node auto-repair"),
    (False, False, [], {}, False, "remediation.cloud.aksAutoRepair"),
    (True, True, [], {}, False, "acts only on NotReady nodes"),
    (True, False, ["ToBeDeletedByClusterAutoscaler"], {}, False, "skips nodes tainted ToBeDeletedByClusterAutoscaler"),
    (True, False, ["node.cloudprovider.kubernetes.io/shutdown"], {}, False, "skips nodes tainted node.cloudprovider"),
    (True, False, [], UPGRADING, False, "AKS is upgrading the node"),
    (True, False, [], {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}, True, "left to AKS"),
])
def test_only_a_notready_node_aks_does_not_exclude_is_handed_over(
        configured: bool, ready: bool, taints: list[str], annotations: dict[str, str], to_aks: bool,
        says: str) -> None:
    hand_off = aks_hand_off(aks_auto_repair=configured, ready=ready, taint_keys=taints, annotations=annotations)
    assert hand_off.to_aks is to_aks
    assert says in hand_off.reason


def test_the_events_aks_writes_are_read_as_its_steps() -> None:
    assert EVENT_SOURCE == "aks-auto-repair"
    assert set(AKS_REPAIR_EVENTS) == {
        "NodeRebootStart", "NodeRebootEnd", "NodeRebootError", "NodeReimageStart", "NodeReimageEnd",
        "NodeReimageError", "NodeRedeployStart", "NodeRedeployEnd", "NodeRedeployError"}
    assert AKS_REPAIR_EVENTS["NodeReimageError"].action == "reimage"
    assert AKS_REPAIR_EVENTS["NodeReimageError"].phase is AksRepairPhase.ERROR
