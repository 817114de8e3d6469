"""The staged rollout in the controller: the gate's inputs read from the cluster, its decision and what it says.

Each round the gate (:func:`gpu_operator.upgrade.stages.evaluate`) sees every GPU node the upgrade observes (one
with a driver pod, or in an upgrade while its new pod is being created) as a :class:`~gpu_operator.upgrade.stages.StagedNode`: its pool (AKS's `kubernetes.azure.com/agentpool`
label; a node without one belongs to the `*` stage), its upgrade state, whether it runs its DaemonSet's newest
driver with nothing else asking for an upgrade, and the GPU fault classes the remediation found on it. The
rollout's *target* is the newest revision of every driver DaemonSet: a driver change (one `pulumi up` changing
several pools' drivers included) is one new target, so one staged rollout. The decision's memory travels in the
status ConfigMap (`rollout`), so a new leader carries on; its halts and stage starts are told as Events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.controller.cluster_state import ClusterState
from gpu_operator.agents.controller.driver_owners import POOL_LABEL
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.upgrade import NodeObservation
from gpu_operator.upgrade.stages import DONE_REASON, HALT_REASON, STAGE_REASON, StageDecision, StagedNode, evaluate
from gpu_operator.upgrade.state_machine import needs_upgrade

__all__ = ["RolloutNotice", "RolloutSeen", "decide", "rollout_notices", "rollout_target", "staged_nodes"]


@dataclass(frozen=True)
class RolloutNotice:
    """Something the rollout did that people should hear of (an Event): a stage started, or the rollout halted."""

    reason: str
    message: str
    warning: bool = False


def rollout_target(state: ClusterState, settings: ControllerSettings) -> str:
    """A short fingerprint of the newest revision of every driver DaemonSet ("" while none has one)."""
    revisions = sorted(f"{name}={ds.revision}" for name, ds in state.daemonsets.items()
                       if ds.app in settings.driver_apps and ds.revision)
    return hashlib.sha256(",".join(revisions).encode()).hexdigest()[:16] if revisions else ""


def staged_nodes(observations: Sequence[NodeObservation], state: ClusterState,
                 faults: Mapping[str, frozenset[str]]) -> list[StagedNode]:
    """The observed nodes as the gate sees them: the managed ones, and those in an upgrade whose driver pod is gone
    for now (deleted by the upgrade and not yet recreated: still in progress, never a stage's settled node)."""
    return [StagedNode(node.name, state.nodes[node.name].labels.get(POOL_LABEL, ""),
                       node.state.value if node.state is not None else "",
                       not needs_upgrade(node), faults.get(node.name, frozenset()))
            for node in observations if node.name in state.nodes]


def decide(state: ClusterState, settings: ControllerSettings, observations: Sequence[NodeObservation],
           now: float) -> StageDecision | None:
    """This round's gate decision, or None without a staged rollout."""
    if settings.rollout is None:
        return None
    return evaluate(settings.rollout, staged_nodes(observations, state, state.node_faults), state.rollout_memory,
                    rollout_target(state, settings), state.firing_alerts, now)


@dataclass(frozen=True)
class RolloutSeen:
    """What the last decision told people: its halt, its active stage, whether it had finished."""

    halted: str = ""
    active: str | None = None
    finished: bool = True

    @classmethod
    def of(cls, decision: StageDecision) -> RolloutSeen:
        return cls(decision.halted, decision.active, decision.finished)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RolloutSeen:
        """From the decision the last leader published (`StageDecision.to_dict()`), so a new leader does not tell
        again what its predecessor told."""
        return cls(str(record.get("halted") or ""), str(record.get("active") or "") or None,
                   bool(record.get("finished", True)))


def rollout_notices(before: StageDecision | RolloutSeen | None, after: StageDecision | None) -> list[RolloutNotice]:
    """What changed between two rounds' decisions: a halt, a stage that became active, the rollout finished."""
    if after is None:
        return []
    seen = RolloutSeen.of(before) if isinstance(before, StageDecision) else before or RolloutSeen()
    was_halted, was_active, was_finished = seen.halted, seen.active, seen.finished
    notices = []
    if after.halted and after.halted != was_halted:
        notices.append(RolloutNotice(HALT_REASON, f"driver rollout halted: {after.halted}", True))
    active = next((stage for stage in after.stages if stage.phase == "active"), None)
    if active is not None and (active.name != was_active or was_halted):
        notices.append(RolloutNotice(STAGE_REASON, f"driver rollout: stage {active.name} started "
                                     f"({len(active.nodes)} node(s))"))
    if after.finished and not was_finished and any(stage.phase == "done" for stage in after.stages):
        notices.append(RolloutNotice(DONE_REASON, "driver rollout finished: every stage upgraded"))
    return notices
