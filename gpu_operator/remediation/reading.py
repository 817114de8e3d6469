"""One node read for planning: its state, its records, and the faults that hold on it now.

A fault *holds* when its class's Node condition is `True` now and changed to `True` after the node's last
recovery (the newest `validate: passed` of the history), compared at the API's resolution of whole seconds: a
condition left over from before a recovery (an agent that wrote late, an old copy replayed) is stale and never
acted on. Of the faults that hold, the one remediated is
the most drastic by its rule (:attr:`~gpu_operator.remediation.policy.EffectiveRule.severity`), then the oldest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpu_operator.faults import FAULT_CLASSES
from gpu_operator.remediation.encoding import (
    FaultRecord,
    HistoryEntry,
    StageRecord,
    gpus_in_message,
    parse_fault,
    parse_history,
    parse_stage,
)
from gpu_operator.remediation.node import NodeView
from gpu_operator.remediation.policy import EffectiveRule, Mode, RemediationPolicy
from gpu_operator.remediation.vocabulary import (
    FAULT_ANNOTATION,
    HISTORY_ANNOTATION,
    STAGE_ANNOTATION,
    STATE_LABEL,
    UPGRADE_HOLDS,
    State,
)

__all__ = ["CONDITION_CLASSES", "ActiveFault", "NodeContext", "read_node"]

#: Node condition type -> the fault class whose condition it is.
CONDITION_CLASSES: Mapping[str, str] = MappingProxyType(
    {c.condition: c.name for c in FAULT_CLASSES.values() if c.condition is not None})
_STATES = {state.value: state for state in State}


@dataclass(frozen=True)
class ActiveFault:
    """A fault that holds now, as the fault annotation would record it, with the rule it gets on this node."""

    record: FaultRecord
    rule: EffectiveRule
    message: str


@dataclass(frozen=True)
class NodeContext:
    view: NodeView
    policy: RemediationPolicy
    now: float
    state: State
    fault: FaultRecord | None
    stage: StageRecord | None
    history: tuple[HistoryEntry, ...]
    active: tuple[ActiveFault, ...]
    """Faults that hold now, the one to remediate first."""
    stale: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def mode(self) -> Mode:
        return self.policy.mode_for(self.view.pool)

    @property
    def primary(self) -> ActiveFault | None:
        return self.active[0] if self.active else None

    @property
    def fault_present(self) -> bool:
        """A fault that is not only observed holds."""
        return any(not fault.rule.observe_only for fault in self.active)

    @property
    def held_by_upgrade(self) -> bool:
        return self.view.upgrade_state in UPGRADE_HOLDS

    @property
    def last_recovery(self) -> float | None:
        return max((e.at for e in self.history if e.recovery), default=None)

    def rule(self) -> EffectiveRule | None:
        """The rule of the fault under remediation (its record's class, else the fault holding now)."""
        if self.fault is not None:
            return self.policy.rule_for(self.view.pool, self.fault.fault_class)
        return self.primary.rule if self.primary is not None else None

    def record(self) -> FaultRecord | None:
        return self.fault if self.fault is not None else (self.primary.record if self.primary else None)


def _active(view: NodeView, policy: RemediationPolicy, last_recovery: float | None,
            problems: list[str]) -> tuple[tuple[ActiveFault, ...], tuple[str, ...]]:
    active, stale = [], []
    for condition in view.conditions:
        name = CONDITION_CLASSES.get(condition.type)
        if name is None or condition.status != "True":
            continue
        since = condition.last_transition_time
        if since is None:
            problems.append(f"condition {condition.type} has no lastTransitionTime: taken as older than any "
                            "recovery")
        # The API keeps condition times in whole seconds: a fault that came back in the recovery's own second
        # (an XID right after the reboot) reads as that second and holds; one older than it is stale.
        if last_recovery is not None and (since or 0.0) < math.floor(last_recovery):
            stale.append(condition.type)
            continue
        record = FaultRecord(name, condition.type, condition.reason, gpus_in_message(condition.message), since or 0.0)
        active.append(ActiveFault(record, policy.rule_for(view.pool, name), condition.message))
    active.sort(key=lambda f: (f.rule.observe_only, -f.rule.severity, f.record.since, f.record.fault_class))
    return tuple(active), tuple(stale)


def read_node(view: NodeView, policy: RemediationPolicy, now: float) -> NodeContext:
    """The node's context for planning; every unreadable label or annotation is reported in `problems`."""
    problems: list[str] = []
    label = view.labels.get(STATE_LABEL, "")
    state = _STATES.get(label)
    if state is None:
        problems.append(f"the state label {label!r} is no state: treated as absent")
        state = State.ABSENT
    fault, stage, history = (parse_fault(view.annotations.get(FAULT_ANNOTATION)),
                             parse_stage(view.annotations.get(STAGE_ANNOTATION)),
                             parse_history(view.annotations.get(HISTORY_ANNOTATION)))
    problems += [read.problem for read in (fault, stage, history) if read.problem]
    entries = history.value or ()
    last_recovery = max((e.at for e in entries if e.recovery), default=None)
    active, stale = _active(view, policy, last_recovery, problems)
    return NodeContext(view, policy, now, state, fault.value, stage.value, entries, active, stale, tuple(problems))
