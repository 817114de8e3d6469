"""Node conditions from findings: one per fault class, written only when they change.

Each fault class with a condition type (`GPUResetRequired`, `GPUFallenOffBus`, ... from the fault catalog) is one
Node condition, in the form Kubernetes' node problem detector writes (kubernetes/node-problem-detector
pkg/exporters/k8sexporter: every condition it owns is on the Node from its start, `False` until a problem):

* `status: "True"` while any finding of the class holds; `reason` is the first finding's (`XID79`,
  `VolatileDBE`, ...), so it does not change while more GPUs join; `message` lists every finding, node-wide ones
  first, then GPUs in the order their faults were first seen: `GPU-<uuid> (<pci>): <detail>`, `; ` between them;
* `status: "False"`, reason `NoFault`, when none holds;
* `lastTransitionTime` moves only when the status does; `lastHeartbeatTime` is the time of each write.

:func:`condition_changes` compares what should be with what the Node shows, and gives only the conditions that
differ (status, reason or message), or all of ours when a heartbeat is due, so that repeating the same fault a
thousand times writes nothing more. The write itself is a strategic merge patch of `status.conditions` on the
`nodes/status` subresource, which merges by `type` and leaves the kubelet's conditions alone (NPD's
`SetConditions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.health_monitor.findings import ENTRY_SEPARATOR, Finding
from gpu_operator.faults import FAULT_CLASSES, FaultClass

__all__ = [
    "CONDITION_CLASSES",
    "NO_FAULT",
    "DesiredCondition",
    "condition_changes",
    "desired_conditions",
    "status_patch",
]

#: Condition type -> its fault class, for every class that has a condition (catalog order).
CONDITION_CLASSES: Mapping[str, FaultClass] = {c.condition: c for c in FAULT_CLASSES.values() if c.condition}
NO_FAULT = "NoFault"
Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DesiredCondition:
    """What one of our conditions should say."""

    type: str
    status: str
    reason: str
    message: str

    def same_as(self, current: Mapping[str, Any] | None) -> bool:
        return current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
            self.status, self.reason, self.message)


def _message(findings: Sequence[Finding]) -> str:
    entries: list[str] = []
    for finding in sorted(findings, key=lambda f: f.gpu is not None):  # stable: node-wide first, order kept
        if finding.entry not in entries:
            entries.append(finding.entry)
    return ENTRY_SEPARATOR.join(entries)


def desired_conditions(findings: Iterable[Finding]) -> dict[str, DesiredCondition]:
    """Every condition of ours, from the findings held now (in first-seen order)."""
    held = list(findings)
    desired = {}
    for condition, fault_class in CONDITION_CLASSES.items():
        mine = [f for f in held if f.fault_class.name == fault_class.name]
        if mine:
            ordered = sorted(mine, key=lambda f: f.gpu is not None)
            desired[condition] = DesiredCondition(condition, "True", ordered[0].reason, _message(mine))
        else:
            desired[condition] = DesiredCondition(condition, "False", NO_FAULT,
                                                  f"No {fault_class.name} fault on this node's GPUs")
    return desired


def condition_changes(current: Iterable[Mapping[str, Any]], desired: Mapping[str, DesiredCondition], now: str, *,
                      heartbeat: bool = False) -> list[Object]:
    """The conditions to write (API form), in `desired`'s order: those that differ from `current`, or all when
    `heartbeat`. `now` is the RFC 3339 time of the write."""
    shown = {c.get("type"): c for c in current}
    changes = []
    for kind, want in desired.items():
        have = shown.get(kind)
        if want.same_as(have) and not heartbeat:
            continue
        moved = have is None or have.get("status") != want.status or not have.get("lastTransitionTime")
        changes.append({
            "type": kind, "status": want.status, "reason": want.reason, "message": want.message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now if moved else have.get("lastTransitionTime"),  # type: ignore[union-attr]
        })
    return changes


def status_patch(conditions: Sequence[Object]) -> Object:
    """The strategic merge patch body that writes these conditions (NPD's `generatePatch`)."""
    return {"status": {"conditions": list(conditions)}}
