"""What the planner reads of a node: a :class:`NodeView`, built by the controller from its Node informer, its pod
watches and what its actuator last saw.

Everything durable comes from the Node (labels, annotations, conditions, `spec.unschedulable`, taints,
`status.nodeInfo.bootID`); the actuator's feedback (how a drain is going, what the cloud answered) lives in the
leader's memory only, so a new leader starts without it and the planner never needs it to avoid repeating a
step: without feedback it waits, and the Node (a new boot ID, the node agent's reset result) tells it the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_operator.remediation.vocabulary import UPGRADE_STATE_LABEL

__all__ = ["CloudFeedback", "DrainFeedback", "NodeCondition", "NodeView", "Taint"]


@dataclass(frozen=True)
class NodeCondition:
    """One entry of `status.conditions`; `last_transition_time` in epoch seconds (None: absent or unreadable)."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None


@dataclass(frozen=True, order=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True)
class DrainFeedback:
    """What the actuator's last drain pass of the node found.

    `gpus` is the scope it drained (the GPU UUIDs of a partial drain; empty: every pod it drains); `pods_left` the
    pods in that scope still on the node (terminating ones included); `blocked` why they are (a
    PodDisruptionBudget refusing, a pod that may not be evicted), for the failure's reason; `at` when it looked."""

    gpus: tuple[str, ...]
    pods_left: int
    at: float
    blocked: str = ""


@dataclass(frozen=True)
class CloudFeedback:
    """The last cloud call for the node: the request id it was made for, and how it ended.

    `outcome` is the cloud result's (`succeeded`, `failed`, `throttled`, `conflict`, `timed-out`), or `pending`
    while the call runs; `retryable` and `retry_after_seconds` as the result gives them; `at` when it ended."""

    request: str
    action: str
    outcome: str
    at: float
    retryable: bool = False
    retry_after_seconds: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class NodeView:
    """One GPU node as the controller knows it (the planner reads nothing else).

    `pool`: the node's pool (AKS's `kubernetes.azure.com/agentpool`; "" when it has none). `validator_ready`: a
    validator pod on the node is Ready, and `validator_ready_since` when it became so (its Ready condition's
    lastTransitionTime), so a pass from before a repair is not taken for one after it. `operand_pods`: pods of the
    operands paused for a reset still on the node, terminating ones included
    (:data:`~gpu_operator.remediation.vocabulary.OPERAND_APPS`). `aks_repairs`: AKS node auto-repair takes the node
    now (the controller asks `gpu_operator.agents.cloud.aks_hand_off`)."""

    name: str
    pool: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[NodeCondition, ...] = ()
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    boot_id: str = ""
    ready: bool = True
    validator_ready: bool = False
    validator_ready_since: float | None = None
    operand_pods: int = 0
    aks_repairs: bool = False
    drain: DrainFeedback | None = None
    cloud: CloudFeedback | None = None

    @property
    def upgrade_state(self) -> str:
        """The driver upgrade's state label (NVIDIA's `nvidia.com/gpu-driver-upgrade-state`), "" without one."""
        return self.labels.get(UPGRADE_STATE_LABEL, "")
