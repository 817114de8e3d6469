"""Staged driver rollouts: the pools upgrade stage by stage (a canary first, the fleet once it holds).

NVIDIA's upgrade controller rolls every node a driver DaemonSet covers as soon as its template changes; a bad
driver spreads until `maxParallelUpgrades` nodes have failed. A staged rollout orders the pools into stages. Each
round the gate decides which nodes the upgrade may *admit* (take from `upgrade-required` into the upgrade); a node
already in progress always finishes, and a node outside the admissible set is left where it is.

* A node belongs to the first stage naming its pool; `*` names every pool no earlier stage names, and the nodes of
  pools no stage names form a last stage of their own (`*`).
* The active stage is the first one not *settled* (every node on its DaemonSet's newest driver and `upgrade-done`
  or never labelled). Only its nodes are admissible.
* A settled stage that had work in this rollout then *soaks*: nothing is admitted until `soakSeconds` after it
  settled. A remediation fault class on one of its nodes during the soak, or a listed alert firing during it,
  halts the rollout; when the alerts cannot be read, the soak does not end until they can. A stage with nothing
  to upgrade in this rollout passes without soaking; the last stage's soak gates nothing.
* A failed node (`upgrade-failed`) in a stage halts the rollout while it stays failed: retrying the node
  (`upgrade-required` again) resumes it. A halt from the soak's gates holds until the rollout's target changes
  (the next driver change) or its record is cleared.
* The rollout is identified by its *target* (the newest revision of each driver DaemonSet); what the gate must
  remember between rounds (stages that had work, when each settled, a halt) is a :class:`RolloutMemory` the
  controller keeps beside its status, so a new leader carries on where the old one was.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_operator.upgrade.observation import NodeObservation, State

__all__ = [
    "DONE_REASON",
    "HALT_REASON",
    "REST",
    "STAGE_REASON",
    "SETTLED_STATES",
    "STATUS_KEY",
    "RolloutMemory",
    "RolloutPolicy",
    "RolloutStage",
    "StageDecision",
    "StageReport",
    "StagedNode",
    "evaluate",
    "gate",
    "read_record",
    "stage_of",
]

#: The key of the controller's status ConfigMap holding the last decision (`StageDecision.to_dict()`, as JSON).
STATUS_KEY = "rollout"
#: The reasons of the Events the controller gives a rollout's halt, a stage's start and its end.
HALT_REASON, STAGE_REASON, DONE_REASON = "GPUDriverRolloutHalted", "GPUDriverRolloutStage", "GPUDriverRolloutDone"
#: The pool pattern for every pool no earlier stage names, and the name of the implicit last stage.
REST = "*"
#: The upgrade states of a node with nothing left to do (never labelled, or done).
SETTLED_STATES = ("", State.DONE.value)


@dataclass(frozen=True)
class RolloutStage:
    name: str
    pools: tuple[str, ...]
    soak_seconds: int = 0


@dataclass(frozen=True)
class RolloutPolicy:
    """The stages in order, and the alerts whose firing during a soak halts the rollout."""

    stages: tuple[RolloutStage, ...]
    alerts: tuple[str, ...] = ()


@dataclass(frozen=True)
class StagedNode:
    """A managed GPU node as the gate sees it: its pool, its upgrade state label value ("" when none), whether it
    runs its driver DaemonSet's newest revision with nothing else asking for an upgrade (`current`), and the
    remediation fault classes whose conditions are on it now."""

    name: str
    pool: str
    state: str
    current: bool
    faults: frozenset[str] = frozenset()

    @property
    def settled(self) -> bool:
        return self.current and self.state in SETTLED_STATES


@dataclass(frozen=True)
class RolloutMemory:
    """What the gate remembers of the rollout toward `target`: the stages that had work, when each settled (epoch
    seconds), and a halt's reason ("" when none)."""

    target: str = ""
    started: frozenset[str] = frozenset()
    settled_at: Mapping[str, float] = field(default_factory=dict)
    halted: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "started": sorted(self.started),
                "settledAt": {name: self.settled_at[name] for name in sorted(self.settled_at)},
                "halted": self.halted}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RolloutMemory:
        """The memory a controller wrote; an unreadable record reads as none (the gate then starts over)."""
        if not isinstance(data, Mapping):
            return cls()
        try:
            return cls(str(data.get("target", "")), frozenset(str(s) for s in data.get("started", ())),
                       {str(k): float(v) for k, v in dict(data.get("settledAt") or {}).items()},
                       str(data.get("halted", "")))
        except (TypeError, ValueError):
            return cls()


@dataclass(frozen=True)
class StageReport:
    """One stage this round: its nodes, how many are settled, failed, in progress; its phase (`done`, `skipped`,
    `soaking`, `active`, `waiting`, `halted`) and, while soaking, when the soak ends (epoch seconds)."""

    name: str
    nodes: tuple[str, ...]
    settled: int
    failed: tuple[str, ...]
    in_progress: int
    phase: str
    soak_until: float | None = None
    soak_seconds: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "phase": self.phase, "nodes": list(self.nodes), "upgraded": self.settled,
                "failed": list(self.failed), "inProgress": self.in_progress, "soakSeconds": self.soak_seconds,
                "soakUntil": self.soak_until}


@dataclass(frozen=True)
class StageDecision:
    """The gate's answer: the nodes the upgrade may admit (None: any, no stage restricts it), the active stage,
    what the rollout waits on, a halt's reason, each stage's report, and the memory to keep."""

    admissible: frozenset[str] | None
    active: str | None
    waiting_on: str
    halted: str
    stages: tuple[StageReport, ...]
    memory: RolloutMemory

    @property
    def finished(self) -> bool:
        return not self.halted and all(stage.phase in ("done", "skipped") for stage in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """What the controller publishes (its status ConfigMap's `rollout`) for `upgrade status` and people."""
        return {"active": self.active or "", "waitingOn": self.waiting_on, "halted": self.halted,
                "finished": self.finished, "stages": [stage.to_dict() for stage in self.stages],
                "memory": self.memory.to_dict()}


def read_record(text: str | None) -> dict[str, Any]:
    """A published decision (`StageDecision.to_dict()` as JSON, the status ConfigMap's `STATUS_KEY`) read back:
    {} when there is none or it does not parse as a JSON object (the controller, `diag` and `upgrade status` then
    read no rollout)."""
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def stage_of(policy: RolloutPolicy, pool: str) -> str:
    """The stage a pool's nodes belong to."""
    named = next((stage.name for stage in policy.stages if pool in stage.pools), None)
    if named is not None:
        return named
    return next((stage.name for stage in policy.stages if REST in stage.pools), REST)


def _stages(policy: RolloutPolicy, nodes: Sequence[StagedNode]) -> list[tuple[RolloutStage, list[StagedNode]]]:
    members: dict[str, list[StagedNode]] = {}
    for node in nodes:
        members.setdefault(stage_of(policy, node.pool), []).append(node)
    stages = list(policy.stages)
    if REST in members and all(stage.name != REST for stage in stages):
        stages.append(RolloutStage(REST, (REST,)))
    return [(stage, sorted(members.get(stage.name, []), key=lambda n: n.name)) for stage in stages]


def _report(stage: RolloutStage, nodes: Sequence[StagedNode], phase: str,
            soak_until: float | None = None) -> StageReport:
    return StageReport(stage.name, tuple(n.name for n in nodes), sum(n.settled for n in nodes),
                       tuple(n.name for n in nodes if n.state == State.FAILED.value),
                       sum(n.state not in (*SETTLED_STATES, State.REQUIRED.value, State.FAILED.value)
                           for n in nodes), phase, soak_until, stage.soak_seconds)


def _soak_halt(stage: RolloutStage, nodes: Sequence[StagedNode], alerts: Iterable[str]) -> str:
    """Why the soak of `stage` halts the rollout ("" when nothing does)."""
    faulty = [f"{node.name} ({', '.join(sorted(node.faults))})" for node in nodes if node.faults]
    if faulty:
        return f"stage {stage.name}: GPU faults during its soak on {', '.join(faulty)}"
    firing = sorted(set(alerts))
    return f"stage {stage.name}: alert(s) firing during its soak: {', '.join(firing)}" if firing else ""


def evaluate(policy: RolloutPolicy, nodes: Sequence[StagedNode], memory: RolloutMemory, target: str,
             firing_alerts: Iterable[str] | None, now: float) -> StageDecision:
    """This round's gate over the managed GPU nodes. `firing_alerts`: the names of the alerts firing now (only
    those of `policy.alerts` count); None when they could not be read, and then no soak that lists alerts ends
    (it cannot be shown to have held)."""
    if memory.target != target:
        memory = RolloutMemory(target)
    listed = set(policy.alerts) & set(firing_alerts or ())
    unread = firing_alerts is None and bool(policy.alerts)
    stages = _stages(policy, nodes)
    started, settled_at = set(memory.started), dict(memory.settled_at)
    reports: list[StageReport] = []
    admissible: frozenset[str] | None = None
    active, waiting = None, ""
    failure, sticky = "", memory.halted  # a failed node's halt lasts while it is failed; a soak's is kept
    for index, (stage, members) in enumerate(stages):
        if failure or sticky or admissible is not None:
            reports.append(_report(stage, members, "waiting"))
            continue
        failed = [node.name for node in members if node.state == State.FAILED.value]
        if failed:
            started.add(stage.name)
            active, failure = stage.name, f"stage {stage.name}: the driver upgrade failed on {', '.join(failed)}"
            reports.append(_report(stage, members, "halted"))
        elif not all(node.settled for node in members):
            started.add(stage.name)
            settled_at.pop(stage.name, None)
            active, admissible = stage.name, frozenset(node.name for node in members)
            waiting = f"stage {stage.name}: {sum(n.settled for n in members)} of {len(members)} node(s) upgraded"
            reports.append(_report(stage, members, "active"))
        elif stage.name not in started:
            reports.append(_report(stage, members, "skipped"))
        else:
            until = settled_at.setdefault(stage.name, now) + stage.soak_seconds
            if index == len(stages) - 1 or (now >= until and not unread):
                reports.append(_report(stage, members, "done"))
                continue
            active, sticky = stage.name, _soak_halt(stage, members, listed)
            if not sticky:
                admissible = frozenset()
                waiting = (f"stage {stage.name}: soaking until {until:.0f} ({until - now:.0f} s left)"
                           if now < until else f"stage {stage.name}: its soak passed, but the alerts "
                           f"({', '.join(policy.alerts)}) could not be read from Prometheus to confirm it held")
            reports.append(_report(stage, members, "halted" if sticky else "soaking", until))
    halted = sticky or failure
    if halted:
        admissible, waiting = frozenset(), halted
    kept = RolloutMemory(target, frozenset(started), settled_at, sticky)
    return StageDecision(admissible, active, waiting, halted, tuple(reports), kept)


def gate(observations: Sequence[NodeObservation], decision: StageDecision) -> list[NodeObservation]:
    """The observations with every node the gate does not admit marked `skip` (read only at `upgrade-required`:
    a node in progress finishes)."""
    if decision.admissible is None:
        return list(observations)
    return [node if node.name in decision.admissible or node.skip else dataclasses.replace(node, skip=True)
            for node in observations]
