"""`diag`'s view of a staged driver rollout (`operator.driver.rollout`): a halted stage and why, or where it waits.

The operator controller publishes its rollout gate's last decision in its status ConfigMap (`gpu-operator-status`,
key `rollout`, the JSON of :meth:`gpu_operator.upgrade.stages.StageDecision.to_dict`): each stage's phase and nodes,
what the rollout waits on, and a halt's reason. A halt degrades the driver layer: the nodes keep the driver they
run, but no later stage gets the new one until someone acts. A failed node's halt lasts while the node stays
`upgrade-failed` (retrying it, `upgrade-required` again, resumes the rollout); a soak's halt (a GPU fault or a
listed alert during the soak) lasts until the next driver change. A rollout under way is worth knowing: the stage
upgrading, or soaking and for how long; a soak that is over while the rollout has not moved on degrades it (the
controller cannot confirm the soak held, for instance when it cannot read the alerts, or it does not run).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any


from gpu_operator.diag.findings import Finding, Layer, Severity
from gpu_operator.diag.operands import duration
from gpu_operator.diag.snapshot import Snapshot
from gpu_operator.render.operands.operator_controller import NAME as CONTROLLER, STATUS_CONFIG_MAP
from gpu_operator.upgrade.observation import STATE_LABEL, State
from gpu_operator.upgrade.stages import HALT_REASON, STATUS_KEY, read_record

__all__ = ["rollout_findings"]


def _decision(snapshot: Snapshot) -> Mapping[str, Any]:
    """The controller's last published decision ({} without one, or when it does not parse)."""
    return read_record(((snapshot.config_map(STATUS_CONFIG_MAP) or {}).get("data") or {}).get(STATUS_KEY))


def _stages(decision: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    stages = decision.get("stages")
    return [stage for stage in stages if isinstance(stage, Mapping)] if isinstance(stages, list) else []


def _waiting(stages: Sequence[Mapping[str, Any]]) -> str:
    waiting = [str(stage.get("name", "")) for stage in stages if stage.get("phase") == "waiting"]
    return f"; waiting behind it: {', '.join(waiting)}" if waiting else ""


def _halted(snapshot: Snapshot, decision: Mapping[str, Any], stages: Sequence[Mapping[str, Any]]) -> Finding:
    reason = str(decision["halted"])
    halted = next((stage for stage in stages if stage.get("phase") == "halted"), {})
    name = str(halted.get("name") or decision.get("active") or "")
    failed = [str(node) for node in halted.get("failed") or ()]
    if failed:
        resume = (f"it resumes once the failed node(s) are retried: after fixing the cause, kubectl label node "
                  f"{' '.join(failed)} {STATE_LABEL}={State.REQUIRED.value} --overwrite")
    else:
        resume = "it holds until the next driver change (a soak's halt is not retried)"
    return Finding(
        "rollout-halted", Layer.DRIVER, Severity.WARNING, f"rollout-stage/{name}",
        f"the staged driver rollout is halted at stage {name}: {reason.removeprefix(f'stage {name}: ')}"
        f"{_waiting(stages)}; {resume}",
        f"gpu-operator upgrade status; kubectl get events -n {snapshot.namespace} "
        f"--field-selector reason={HALT_REASON}")


def _soaking(snapshot: Snapshot, decision: Mapping[str, Any], stage: Mapping[str, Any],
             stages: Sequence[Mapping[str, Any]]) -> Finding:
    name, until = str(stage.get("name", "")), stage.get("soakUntil")
    subject, status = f"rollout-stage/{name}", "gpu-operator upgrade status"
    if not isinstance(until, (int, float)):
        return Finding("rollout-soaking", Layer.DRIVER, Severity.INFO, subject,
                       f"stage {name} soaks before the next stage starts{_waiting(stages)}", status)
    left = datetime.fromtimestamp(until, timezone.utc) - snapshot.now
    if left > timedelta(0):
        return Finding("rollout-soaking", Layer.DRIVER, Severity.INFO, subject,
                       f"stage {name} soaks for {duration(left)} more before the next stage starts"
                       f"{_waiting(stages)}", status)
    return Finding(
        "rollout-soaking", Layer.DRIVER, Severity.WARNING, subject,
        f"stage {name}'s soak ended {duration(-left)} ago but the rollout has not moved on: "
        f"{decision.get('waitingOn') or 'the controller has not decided since'}{_waiting(stages)}",
        f"{status}; kubectl logs -n {snapshot.namespace} deployment/{CONTROLLER} (is the controller running, "
        "and can it read the alerts?)")


def rollout_findings(snapshot: Snapshot) -> list[Finding]:
    decision = _decision(snapshot)
    stages = _stages(decision)
    if decision.get("halted"):
        return [_halted(snapshot, decision, stages)]
    soaking = next((stage for stage in stages if stage.get("phase") == "soaking"), None)
    if soaking is not None:
        return [_soaking(snapshot, decision, soaking, stages)]
    active = next((stage for stage in stages if stage.get("phase") == "active"), None)
    if active is None:
        return []
    name = str(active.get("name", ""))
    return [Finding("rollout-waiting", Layer.DRIVER, Severity.INFO, f"rollout-stage/{name}",
                    f"the staged driver rollout is upgrading stage {name}: "
                    f"{decision.get('waitingOn') or 'in progress'}{_waiting(stages)}",
                    "gpu-operator upgrade status --watch")]
