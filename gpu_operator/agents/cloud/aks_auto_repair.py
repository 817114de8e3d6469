"""Handing a node over to AKS node auto-repair, where AKS will act, instead of racing it.

What AKS node auto-repair is (Microsoft's "Azure Kubernetes Service (AKS) node auto-repair" page): it is on for
every AKS cluster and cannot be asked for anything. It watches the Ready condition only: a node that reports
NotReady on consecutive checks, or no status, for about five to ten minutes is rebooted, then reimaged, then (Linux)
redeployed, each step retried up to three times, the whole sequence taking up to an hour. It acts as the user
`aks-remediator` and reports each step as a Node Event from the source `aks-auto-repair` (`NodeRebootStart`,
`NodeRebootEnd`, `NodeRebootError`, and the same for Reimage and Redeploy). It does not act on a node that carries
the taint `node.cloudprovider.kubernetes.io/shutdown` or `ToBeDeletedByClusterAutoscaler`, nor on one AKS is
upgrading (the annotations `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` and
`kubernetes.azure.com/azure-cluster-autoscaler-scale-down-disabled-reason: upgrade`). Its GPU checks (the Node
Problem Detector's XID and NVLink conditions) run only on pools where AKS installs the GPU driver, which ours do not.

So the hand-off the facts allow, and the one built here (`remediation.cloud.aksAutoRepair: true`):

* a node that is NotReady, and that AKS does not exclude, is AKS's: the controller takes no cloud action (no
  reboot or reimage of its own that would collide with AKS's), marks it `repairing`, follows the `aks-auto-repair`
  Events, and escalates if the node has not come back within :data:`REPAIR_WINDOW_SECONDS`;
* a Ready node with a GPU fault (the usual case: XID 79 or a double-bit ECC error leaves the kubelet healthy) is
  never repaired by AKS, so the controller reboots or reimages it through the scale set API
  (:mod:`gpu_operator.agents.cloud.azure_vmss`);
* not built: deleting the machine through the agent pool `deleteMachines` API so that AKS "replaces" it. That API
  shrinks the pool by the machines it deletes and nothing adds one back (AKS's own guidance is to scale the pool
  again afterwards; only the cluster autoscaler would, and only for pending pods), and the pool's count is the
  stack's, so it would leave a manual pool short and the stack out of step with Azure. The controller's identity
  therefore gets no AKS rights at all.

Pure: the controller passes what it read from the Node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "AKS_REPAIR_EVENTS",
    "EVENT_SOURCE",
    "EXCLUDING_TAINTS",
    "REPAIR_WINDOW_SECONDS",
    "UPGRADE_ANNOTATIONS",
    "AksRepairEvent",
    "AksRepairPhase",
    "HandOff",
    "aks_hand_off",
]

#: The `source.component` of the Events AKS node auto-repair writes on the Node.
EVENT_SOURCE = "aks-auto-repair"
#: How long AKS's reboot/reimage/redeploy sequence may take ("up to an hour"); past it, escalate.
REPAIR_WINDOW_SECONDS = 3600
#: Taints under which AKS does not repair a node.
EXCLUDING_TAINTS = ("node.cloudprovider.kubernetes.io/shutdown", "ToBeDeletedByClusterAutoscaler")
#: Annotations AKS puts on a node it is upgrading; it does not repair such a node.
UPGRADE_ANNOTATIONS = {
    "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
    "kubernetes.azure.com/azure-cluster-autoscaler-scale-down-disabled-reason": "upgrade",
}


class AksRepairPhase(str, Enum):
    START = "start"
    END = "end"
    ERROR = "error"


@dataclass(frozen=True)
class AksRepairEvent:
    """What one `aks-auto-repair` Event reason says: which of AKS's steps, and where it stands."""

    action: str
    phase: AksRepairPhase


#: Event reason → (AKS's step, phase). `End` says the step finished, not that the node is healthy again.
AKS_REPAIR_EVENTS: Mapping[str, AksRepairEvent] = {
    f"Node{step.capitalize()}{phase.value.capitalize()}": AksRepairEvent(step, phase)
    for step in ("reboot", "reimage", "redeploy")
    for phase in AksRepairPhase
}


@dataclass(frozen=True)
class HandOff:
    """Whether AKS node auto-repair takes the node (and the controller takes no cloud action), and why."""

    to_aks: bool
    reason: str


def aks_hand_off(*, aks_auto_repair: bool, ready: bool, taint_keys: Iterable[str],
                 annotations: Mapping[str, str]) -> HandOff:
    """Who repairs the node: AKS (NotReady, not excluded, hand-off configured) or this controller."""
    if not aks_auto_repair:
        return HandOff(False, "the hand-off to AKS node auto-repair is off (remediation.cloud.aksAutoRepair)")
    if ready:
        return HandOff(False, "the node is Ready: AKS node auto-repair acts only on NotReady nodes")
    excluding = sorted(set(taint_keys) & set(EXCLUDING_TAINTS))
    if excluding:
        return HandOff(False, f"AKS node auto-repair skips nodes tainted {', '.join(excluding)}")
    if all(annotations.get(key) == value for key, value in UPGRADE_ANNOTATIONS.items()):
        return HandOff(False, "AKS is upgrading the node, and node auto-repair skips it meanwhile")
    return HandOff(True, "the node is NotReady: left to AKS node auto-repair (reboot, reimage, redeploy)")
