"""How far a driver rollout is, per stage and pool, and how long it should still take.

`gpu-operator upgrade status` reads the nodes (their upgrade state label, failure reason, pool), the driver pods
(which DaemonSet and revision each node runs), the controller's state-change Events (reason `GPUDriverUpgrade`,
"... state label to <state>") and the staged rollout's gate as the controller last published it, and reduces them
here to a report: nodes by state per stage and pool, the failed ones with their reason, what the rollout waits
on, a halt's reason, and an estimate of the time left.

The estimate is the observed per-node time (the median, over the nodes whose last upgrade finished, of the time
from their admission to `upgrade-done`, read from the Events) times the rounds the remaining nodes still need at
`maxParallelUpgrades` at once (each driver group within its own limit, the groups side by side: the slowest
group sets the time), plus the soaks still ahead. With no node finished yet there is no estimate.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_operator.upgrade.groups import CLUSTER_GROUP
from gpu_operator.upgrade.observation import State
from gpu_operator.upgrade.stages import SETTLED_STATES

__all__ = [
    "ADMISSION_STATES",
    "NodeProgress",
    "PoolProgress",
    "RolloutProgress",
    "Transition",
    "per_node_seconds",
    "progress",
]

#: The states a node enters when the upgrade admits it (cordon-required, or pod-restart-required for a restart).
ADMISSION_STATES = frozenset({State.CORDON.value, State.POD_RESTART.value})


@dataclass(frozen=True)
class NodeProgress:
    """A GPU node with a driver pod: its pool, its stage ("" without stages), upgrade state label value, whether
    its driver pod runs its DaemonSet's newest revision, the failure reason when it failed, and the driver group
    whose upgrade policy it is upgraded under."""

    name: str
    pool: str
    stage: str
    state: str
    current: bool
    reason: str = ""
    group: str = CLUSTER_GROUP

    @property
    def settled(self) -> bool:
        return self.current and self.state in SETTLED_STATES


@dataclass(frozen=True)
class Transition:
    """A node entering an upgrade state at `at` (epoch seconds), as the controller's Event says."""

    node: str
    state: str
    at: float


@dataclass(frozen=True)
class PoolProgress:
    stage: str
    pool: str
    nodes: int
    settled: int
    by_state: Mapping[str, int]
    failed: Mapping[str, str]


@dataclass(frozen=True)
class RolloutProgress:
    pools: tuple[PoolProgress, ...]
    nodes: int
    settled: int
    failed: Mapping[str, str]
    per_node_seconds: float | None
    seconds_left: float | None
    waiting_on: str = ""
    halted: str = ""
    stages: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    @property
    def finished(self) -> bool:
        return self.settled == self.nodes and not self.failed and not self.halted

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes, "upgraded": self.settled, "failed": dict(self.failed),
            "finished": self.finished, "waitingOn": self.waiting_on, "halted": self.halted,
            "perNodeSeconds": self.per_node_seconds, "secondsLeft": self.seconds_left,
            "stages": [dict(stage) for stage in self.stages],
            "pools": [{"stage": p.stage, "pool": p.pool, "nodes": p.nodes, "upgraded": p.settled,
                       "byState": dict(p.by_state), "failed": dict(p.failed)} for p in self.pools],
        }


def per_node_seconds(transitions: Iterable[Transition]) -> float | None:
    """The median time from admission to `upgrade-done` over the nodes whose last upgrade finished."""
    admitted: dict[str, float] = {}
    spans: dict[str, float] = {}
    for transition in sorted(transitions, key=lambda t: t.at):
        if transition.state in ADMISSION_STATES and transition.node not in admitted:
            admitted[transition.node] = transition.at
        elif transition.state == State.DONE.value and transition.node in admitted:
            spans[transition.node] = transition.at - admitted.pop(transition.node)
        elif transition.state == State.REQUIRED.value:
            admitted.pop(transition.node, None)  # a new upgrade of the node starts its clock again
    return statistics.median(spans.values()) if spans else None


def _state(node: NodeProgress) -> str:
    if node.state in SETTLED_STATES and not node.current:
        return "outdated"
    return node.state or State.DONE.value


def _rounds(nodes: Sequence[NodeProgress], max_parallel: Mapping[str, int]) -> int:
    """The upgrade rounds the slowest driver group still needs (a group without a limit: one round)."""
    remaining = Counter(node.group for node in nodes if not node.settled and node.state != State.FAILED.value)
    limits = {group: max_parallel.get(group, max_parallel.get(CLUSTER_GROUP, 1)) for group in remaining}
    return max((math.ceil(count / limits[group]) if limits[group] else 1 for group, count in remaining.items()),
               default=0)


def progress(nodes: Sequence[NodeProgress], transitions: Iterable[Transition], max_parallel: Mapping[str, int],
             soaks_ahead: float = 0.0, waiting_on: str = "", halted: str = "",
             stages: Sequence[Mapping[str, Any]] = ()) -> RolloutProgress:
    """The report. `max_parallel`: each driver group's maxParallelUpgrades (0: no limit; a group not named takes
    the cluster driver's); `soaks_ahead`: the seconds of soak the stages still ahead will wait."""
    groups: dict[tuple[str, str], list[NodeProgress]] = {}
    for node in nodes:
        groups.setdefault((node.stage, node.pool), []).append(node)
    pools = tuple(PoolProgress(stage, pool, len(members), sum(n.settled for n in members),
                               dict(sorted(Counter(_state(n) for n in members).items())),
                               {n.name: n.reason for n in members if n.state == State.FAILED.value})
                  for (stage, pool), members in groups.items())
    failed = {name: reason for pool in pools for name, reason in pool.failed.items()}
    per_node = per_node_seconds(transitions)
    rounds = _rounds(nodes, max_parallel)
    left = None if per_node is None else rounds * per_node + (soaks_ahead if rounds else 0.0)
    return RolloutProgress(pools, len(nodes), sum(node.settled for node in nodes), failed, per_node, left,
                           waiting_on, halted, tuple(stages))
