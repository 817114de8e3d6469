"""What the planner asks the controller's actuator to do for one node, and the Events it reports.

Order matters, and is the actuator's to keep: a node's :class:`NodePatch` is applied first, and its other
actions run only once the patch succeeded. The patch records the stage (and the request id) before the drain,
the reset, the reboot or the reimage is carried out, so a leader that dies after the write and before the action
finds the stage written and never asks twice; one that dies before the write finds nothing and plans the same
step again (same request id).

`taints` in a patch is the node's whole new taint list (None: unchanged), computed from the taints the view held:
the actuator should send it with the Node's resourceVersion so that a taint someone added meanwhile is not lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gpu_operator.remediation.node import NodeView, Taint

__all__ = [
    "CloudRequest",
    "DrainPods",
    "LocalRequest",
    "NodePatch",
    "PlannedEvent",
    "RestartValidator",
    "apply_patch",
]


@dataclass(frozen=True)
class NodePatch:
    """One merge patch of a node: labels and annotations (None removes), schedulability and taints when not None."""

    node: str
    labels: Mapping[str, str | None] = field(default_factory=dict)
    annotations: Mapping[str, str | None] = field(default_factory=dict)
    unschedulable: bool | None = None
    taints: tuple[Taint, ...] | None = None


@dataclass(frozen=True)
class DrainPods:
    """One drain pass of a node.

    `mode`: `evict` (the Eviction API: a PodDisruptionBudget's refusal is an answer, the pod stays), `delete`
    (delete the pods, PDBs or not) or `wait` (evict nothing: count the pods, which are left to finish). `gpus`: the
    UUIDs of a partial drain, whose scope is the pods that hold one of these GPUs (by the device plugin's
    allocation or a DRA claim); empty: every pod a drain takes (not DaemonSet pods, not mirror pods, not the
    operator's own). The actuator reports what is left as :class:`~gpu_operator.remediation.node.DrainFeedback`
    with the same `gpus`. `deadline`: when the drain fails if pods are still there (for the actuator's logs)."""

    node: str
    mode: str
    gpus: tuple[str, ...]
    deadline: float


@dataclass(frozen=True)
class RestartValidator:
    """Delete the node's validator pods created before `created_before`, so a fresh one validates the repair."""

    node: str
    created_before: float


@dataclass(frozen=True)
class CloudRequest:
    """Ask the cloud to `reboot` or `reimage` the node's machine, under `request` (the stage's request id)."""

    node: str
    action: str
    request: str


@dataclass(frozen=True)
class LocalRequest:
    """A request to the node's own agent (`reset-gpu` of `gpus`, or `reboot`). For logs and metrics only: the
    request is an annotation the node's patch already writes."""

    node: str
    action: str
    request: str
    gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlannedEvent:
    """A Kubernetes Event on the Node (namespace `default`)."""

    node: str
    reason: str
    message: str
    warning: bool = False


def _merged(current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    merged = dict(current)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def apply_patch(view: NodeView, patch: NodePatch | None) -> NodeView:
    """The node as it is after the patch (what the informer shows next; for simulations and tests)."""
    if patch is None:
        return view
    return replace(
        view,
        labels=_merged(view.labels, patch.labels),
        annotations=_merged(view.annotations, patch.annotations),
        unschedulable=view.unschedulable if patch.unschedulable is None else patch.unschedulable,
        taints=view.taints if patch.taints is None else patch.taints,
    )
