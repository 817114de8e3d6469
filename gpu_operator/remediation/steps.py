"""One node's next step: the remediation as a state machine whose whole state is on the Node.

Each plan takes at most one step per node and writes it in one patch, before any action it starts:

```
absent ──fault──► observing                        (mode observe, an observe-only rule, or the upgrade holds it)
       └────────► deferred ──breaker lets go──┐     (a breaker holds)
       └──────────────────────────────────────┴──► quarantined (cordon, taint) ──slot──► draining ──► resetting
           ──► rebooting ──► reimaging (or repairing: AKS node auto-repair) ──► validating ──► absent (uncordoned)
                                           any rung failed, past the last one, or attempts used up ──► needs-human
```

Every rung runs in phases: *prepare* (a drain, operands paused for a reset, the reboot interval waited out), *act*
(the request recorded with its id, then carried out) and *validate* (a fresh validator pod Ready, the node Ready,
the fault gone). A repair is judged by what the Node shows, never by the leader's memory: a reset by the node
agent's `reset-result` for the request id, a reboot or reimage by a new `bootID`; a cloud answer only decides
sooner that a call failed. A rung that fails moves the node to the ladder's next rung (forward, by place in
ACTIONS); a rung that cannot apply to this node is passed over (a reset without a GPU named, a reimage without the
cloud). A fault that stops holding before its repair was asked for sends the node to validation; one that comes
back during validation fails the rung.

Why these choices (an SRE's, for a large fleet):

* Quarantine is never capped by `maxConcurrent`, only by the breakers: stopping new work landing on a broken GPU
  is cheap and urgent; draining and rebooting is what needs pacing.
* The drain before a reset is partial (only the pods holding the faulty GPUs) with `drain.partial`: a reset needs
  only that GPU free. A reboot or reimage after it first drains the rest, under its own rung.
* A failed drain (the deadline passed with pods left, a PodDisruptionBudget refusing) goes to `needs-human`:
  resetting or rebooting under a workload the budget protects is a person's call.
* A reboot whose request was recorded but whose outcome a restarted leader cannot know is never asked again: the
  node's boot ID tells whether it happened; if it has not within the rung's timeout, the rung failed.
* `observe` mode stops new work only: validations, uncordons and repairs already asked for finish; a rung that
  fails then ends in `needs-human`.
* A node someone else cordoned is never uncordoned; one someone uncordoned mid-remediation is not cordoned again
  (the controller no longer owns its cordon, and says so). A person hands a `needs-human` node back by removing
  the state label: the controller validates it and uncordons it if it had cordoned it.
"""

from __future__ import annotations

from dataclasses import replace

from gpu_operator.faults import QUARANTINE_ACTIONS
from gpu_operator.remediation.actions import CloudRequest, DrainPods, LocalRequest, PlannedEvent, RestartValidator
from gpu_operator.remediation.encoding import (
    PENDING,
    RECOVERED,
    FaultRecord,
    HistoryEntry,
    ResetRequest,
    StageRecord,
    format_fault,
    format_history,
    format_reset_request,
    format_stage,
    parse_reset_result,
    prune_history,
)
from gpu_operator.remediation.guardrails import Budget
from gpu_operator.remediation.node import Taint
from gpu_operator.remediation.policy import DrainMode, EffectiveRule, Mode
from gpu_operator.remediation.reading import ActiveFault, NodeContext
from gpu_operator.remediation.vocabulary import (
    CORDONED_ANNOTATION,
    FAULT_ANNOTATION,
    HISTORY_ANNOTATION,
    OPERAND_APPS,
    PAUSED_FOR_RESET,
    QUARANTINED,
    REBOOT_REQUEST_ANNOTATION,
    REMEDIATING,
    REPAIR_ACTIONS,
    RESET_REQUEST_ANNOTATION,
    RESET_RESULT_ANNOTATION,
    STAGE_ANNOTATION,
    STATE_LABEL,
    WHOLE_NODE_ACTIONS,
    State,
    request_id,
)

__all__ = ["CLOUD_RETRY_SECONDS", "POLL_SECONDS", "Outcome", "RUNG_STATES", "step"]

#: How soon to look again while pods are leaving (a drain, operands paused for a reset).
POLL_SECONDS = 2.0
#: When a cloud call was throttled or in conflict and the cloud named no time to come back.
CLOUD_RETRY_SECONDS = 30.0
#: The state label of each rung.
RUNG_STATES = {"cordon": State.QUARANTINED, "taint": State.QUARANTINED, "drain": State.DRAINING,
               "reset-gpu": State.RESETTING, "reboot": State.REBOOTING, "reimage": State.REIMAGING,
               "needs-human": State.NEEDS_HUMAN}
_REQUESTS = (RESET_REQUEST_ANNOTATION, RESET_RESULT_ANNOTATION, REBOOT_REQUEST_ANNOTATION)
_RETRY_OUTCOMES = frozenset({"throttled", "conflict"})


class Outcome:
    """What one node's step writes and does (built up by the step, read by the planner)."""

    def __init__(self, ctx: NodeContext, dry_run: bool) -> None:
        self.ctx = ctx
        self.dry_run = dry_run
        self.state = ctx.state
        self.labels: dict[str, str | None] = {}
        self.annotations: dict[str, str | None] = {}
        self.unschedulable: bool | None = None
        self.taints: tuple[Taint, ...] | None = None
        self.drain: DrainPods | None = None
        self.restart_validator: RestartValidator | None = None
        self.cloud: CloudRequest | None = None
        self.local: LocalRequest | None = None
        self.events: list[PlannedEvent] = []
        self.started: list[str] = []
        self.finished: list[tuple[str, str]] = []
        self.latency: list[float] = []
        self.next_step = ""
        self.wake_at: float | None = None
        self.problems = list(ctx.problems)
        self._history = list(ctx.history)

    # --- writes -------------------------------------------------------------------------------------------------

    def annotate(self, key: str, value: str | None) -> None:
        if self.ctx.view.annotations.get(key) == value:
            self.annotations.pop(key, None)
        else:
            self.annotations[key] = value

    def set_state(self, state: State) -> None:
        self.state = state
        self.labels.pop(STATE_LABEL, None)
        if self.ctx.view.labels.get(STATE_LABEL, "") != state.value:
            self.labels[STATE_LABEL] = state.value or None

    def set_fault(self, record: FaultRecord | None) -> None:
        self.annotate(FAULT_ANNOTATION, None if record is None else format_fault(record))

    def set_stage(self, stage: StageRecord | None) -> None:
        self.annotate(STAGE_ANNOTATION, None if stage is None else format_stage(stage))

    def history_start(self, action: str) -> None:
        self._history.append(HistoryEntry(action, self.ctx.now, PENDING))
        self._write_history()

    def history_end(self, action: str, result: str) -> None:
        for index in range(len(self._history) - 1, -1, -1):
            entry = self._history[index]
            if entry.action == action and entry.result == PENDING:
                self._history[index] = replace(entry, result=result)
                self._write_history()
                return

    @property
    def history(self) -> tuple[HistoryEntry, ...]:
        return tuple(self._history)

    def history_recovered(self) -> None:
        self._history.append(HistoryEntry(RECOVERED[0], self.ctx.now, RECOVERED[1]))
        self._write_history()

    def _write_history(self) -> None:
        window = self.ctx.policy.attempts.window_seconds
        self.annotate(HISTORY_ANNOTATION, format_history(prune_history(self._history, self.ctx.now, window)))

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        self.events.append(PlannedEvent(self.ctx.name, reason, message, warning))

    def wake(self, at: float) -> None:
        self.wake_at = at if self.wake_at is None else min(self.wake_at, at)

    def say(self, text: str) -> None:
        self.next_step = text


# --- helpers ------------------------------------------------------------------------------------------------------


def _describe(record: FaultRecord | None) -> str:
    if record is None:
        return "a GPU fault"
    where = ", ".join(g.uuid + (f" ({g.pci})" if g.pci else "") for g in record.gpus) or "the node"
    return f"{record.fault_class} ({record.reason or record.condition}) on {where}"


def _quarantine_rung(rule: EffectiveRule) -> str:
    """The ladder's last quarantine rung (`cordon` for a ladder that has none: an observe rule changed under a
    node in remediation)."""
    return ([a for a in rule.actions if a in QUARANTINE_ACTIONS] or ["cordon"])[-1]


def _applies(ctx: NodeContext, rung: str) -> bool:
    """Whether a rung can act on this node: a reset needs the faulty GPUs named, a reimage the cloud; the
    quarantine rungs are taken together when the node is quarantined, never one by one after."""
    record = ctx.record()
    if rung in QUARANTINE_ACTIONS:
        return False
    if rung == "reset-gpu":
        return record is not None and bool(record.gpus)
    if rung == "reimage":
        return ctx.policy.cloud.can_reimage
    return True


def _next_rung(ctx: NodeContext, rule: EffectiveRule, after: str) -> str | None:
    rung = rule.next_rung(after)
    while rung is not None and not _applies(ctx, rung):
        rung = rule.next_rung(rung)
    return rung


def _drain_scope(ctx: NodeContext, rule: EffectiveRule) -> tuple[str, ...]:
    """The GPUs of a partial drain (before a reset, with `drain.partial`); empty: the whole node."""
    record = ctx.record()
    if not rule.drain.partial or record is None or not record.gpus:
        return ()
    repair = next((r for r in rule.actions[rule.actions.index("drain") + 1:] if r in REPAIR_ACTIONS
                   and _applies(ctx, r)), None) if "drain" in rule.actions else None
    return tuple(g.uuid for g in record.gpus) if repair == "reset-gpu" else ()


def _drain_pass(ctx: NodeContext, out: Outcome, rule: EffectiveRule, scope: tuple[str, ...],
                since: float) -> bool | None:
    """One drain pass from `since`: True when drained, False when it failed (the node needs a person), None while
    under way (a drain asked for)."""
    feedback = ctx.view.drain
    fresh = feedback if feedback is not None and feedback.gpus == scope and feedback.at >= since else None
    if fresh is not None and fresh.pods_left == 0:
        return True
    drain = rule.drain
    deadline = since + drain.timeout_seconds
    if fresh is not None and ctx.now >= deadline:
        left = f"{fresh.pods_left} pod{'s' if fresh.pods_left != 1 else ''} left"
        out.finished.append(("drain", "failed"))
        _to_needs_human(ctx, out, f"the drain did not end within {drain.timeout_seconds} s ({left}"
                                  f"{': ' + fresh.blocked if fresh.blocked else ''})")
        return False
    mode = {DrainMode.EVICT: "evict", DrainMode.WAIT_FOR_COMPLETION: "wait"}.get(drain.mode, "delete")
    if drain.mode is DrainMode.DELETE and ctx.now < since + drain.delete_after_seconds:
        mode = "evict"
    out.drain = DrainPods(ctx.name, mode, scope, deadline)
    out.wake(ctx.now + POLL_SECONDS)
    scope_text = "the pods of " + ", ".join(scope) if scope else "the node"
    out.say(f"drain {scope_text} ({mode}; fails at {deadline:.0f} with pods left)")
    return None


def _operand_labels(ctx: NodeContext, pause: bool) -> dict[str, str]:
    labels = ctx.view.labels
    if pause:
        return {key: PAUSED_FOR_RESET for key in OPERAND_APPS if labels.get(key) == "true"}
    return {key: "true" for key in OPERAND_APPS if labels.get(key) == PAUSED_FOR_RESET}


def _clear_requests(ctx: NodeContext, out: Outcome) -> None:
    out.labels.update(_operand_labels(ctx, pause=False))
    for key in _REQUESTS:
        out.annotate(key, None)


def _attempts_used(ctx: NodeContext) -> int:
    window = ctx.policy.attempts.window_seconds
    return sum(1 for e in ctx.history if e.action in REPAIR_ACTIONS and e.at >= ctx.now - window)


def _attempt(ctx: NodeContext, stage: StageRecord) -> int:
    """The number of the repair about to be asked for: the repairs in the window and this one (never less than
    the stage already says, so a node's attempt count only grows)."""
    return max(_attempts_used(ctx) + 1, stage.attempt)


def _attempts_left(ctx: NodeContext, out: Outcome) -> bool:
    limit, used = ctx.policy.attempts.max, _attempts_used(ctx)
    if limit is not None and used >= limit:
        _to_needs_human(ctx, out, f"{used} repairs in the last {ctx.policy.attempts.window_seconds} s "
                                  f"(attempts.max {limit})")
        return False
    return True


# --- transitions --------------------------------------------------------------------------------------------------


def _to_needs_human(ctx: NodeContext, out: Outcome, reason: str) -> None:
    _clear_requests(ctx, out)
    attempt = ctx.stage.attempt if ctx.stage else 0
    out.set_state(State.NEEDS_HUMAN)
    out.set_fault(ctx.record())
    out.set_stage(StageRecord("needs-human", ctx.now, attempt, reason=reason))
    out.event("GPURemediationNeedsHuman", f"{_describe(ctx.record())}: needs a person: {reason}", warning=True)
    out.say(f"needs a person ({reason}); when fixed, remove the label {STATE_LABEL} to validate and uncordon it")


def _to_validating(ctx: NodeContext, out: Outcome, stage: StageRecord) -> None:
    _clear_requests(ctx, out)
    out.set_state(State.VALIDATING)
    out.set_stage(replace(stage, validating=ctx.now))
    out.restart_validator = RestartValidator(ctx.name, ctx.now)
    out.wake(ctx.now + ctx.policy.timeouts.validation_seconds)
    out.event("GPURemediationValidating", f"{_describe(ctx.record())}: validating the node (a fresh validator pod)")
    out.say("validate: a fresh validator pod Ready, the node Ready, the fault gone")


def _quarantine(ctx: NodeContext, out: Outcome, fault: ActiveFault) -> None:
    rule, view = fault.rule, ctx.view
    out.set_state(State.QUARANTINED)
    out.set_fault(fault.record)
    out.set_stage(StageRecord(_quarantine_rung(rule), ctx.now))
    done = []
    if "cordon" in rule.actions and not view.unschedulable:
        out.unschedulable = True
        out.annotate(CORDONED_ANNOTATION, "true")
        done.append("cordoned")
    if "taint" in rule.actions and not any(t.key == rule.taint.key for t in view.taints):
        out.taints = (*view.taints, Taint(rule.taint.key, rule.taint.effect, fault.record.fault_class))
        done.append(f"tainted {rule.taint.key}:{rule.taint.effect}")
    if fault.record.since > 0:
        out.latency.append(max(ctx.now - fault.record.since, 0.0))
    out.event("GPURemediationQuarantined",
              f"{_describe(fault.record)}: {' and '.join(done) or 'already out of scheduling'}", warning=True)
    out.wake(ctx.now)
    out.say("quarantined: next, the ladder's next rung when a remediation slot is free")


def _enter(ctx: NodeContext, out: Outcome, rung: str, failed: str | None) -> None:
    """Start a rung. After a failure (`failed`, or one earlier in this remediation, carried in the stage's
    `reason`) the ladder goes on whether or not a fault condition still holds: the node did not validate."""
    rule = ctx.rule()
    assert rule is not None
    attempt = ctx.stage.attempt if ctx.stage else 0
    reason = failed or (ctx.stage.reason if ctx.stage else None)
    stage = StageRecord(rung, ctx.now, attempt, reason=reason)
    out.set_state(RUNG_STATES[rung])
    out.set_stage(stage)
    if rung == "drain":
        out.started.append(rung)
        scope = _drain_scope(ctx, rule)
        out.event("GPURemediationDraining", f"{_describe(ctx.record())}: draining "
                  + ("the pods of the faulty GPUs" if scope else "the node"))
        _drain_pass(ctx, out, rule, scope, ctx.now)
        return
    # the rung's preparation starts in the same patch (a reset's pause is only written, never acted on, here)
    entered = replace(ctx, stage=stage, state=RUNG_STATES[rung])
    (_prepare_reset if rung == "reset-gpu" else _prepare_restart)(entered, out, rule)


def _advance(ctx: NodeContext, out: Outcome, rule: EffectiveRule, after: str, failed: str | None) -> None:
    rung = _next_rung(ctx, rule, after)
    if rung is None:
        if failed is not None:
            _to_needs_human(ctx, out, f"{after} failed ({failed}) and the ladder has no rung after it")
        else:
            out.say("at the end of its ladder: waits for the fault to clear, then validates")
        return
    if rung == "needs-human":
        handed = f"the {ctx.record().fault_class if ctx.record() else 'fault'} ladder hands it to a person"
        _to_needs_human(ctx, out, f"{after} failed ({failed}); {handed}" if failed else handed)
        return
    if ctx.mode is Mode.OBSERVE:
        if failed is not None:
            _to_needs_human(ctx, out, f"{after} failed ({failed}), and remediation is in observe mode")
        else:
            out.say(f"remediation is in observe mode: {rung} is not started")
        return
    _enter(ctx, out, rung, None if failed is None else f"{after} failed: {failed}")


def _rung_failed(ctx: NodeContext, out: Outcome, rule: EffectiveRule, reason: str) -> None:
    stage = ctx.stage
    assert stage is not None
    if stage.action in REPAIR_ACTIONS and stage.request is not None:
        out.history_end(stage.action, f"failed: {reason}")
        out.finished.append((stage.action, "failed"))
    out.event("GPURemediationStepFailed", f"{_describe(ctx.record())}: {stage.action} failed: {reason}", warning=True)
    _clear_requests(ctx, out)
    _advance(ctx, out, rule, stage.action, reason)


def _retry(ctx: NodeContext, out: Outcome, rule: EffectiveRule, reason: str) -> None:
    """The reboot or reimage asked for never happened (the node stayed Ready on the same boot): the request was
    lost (a leader that died before the call, a call that never ran), so the rung starts again as a new attempt,
    within `attempts` and the reboot interval."""
    stage = ctx.stage
    assert stage is not None
    out.history_end(stage.action, f"failed: {reason}")
    out.finished.append((stage.action, "failed"))
    _clear_requests(ctx, out)
    out.event("GPURemediationStepFailed", f"{_describe(ctx.record())}: {stage.action} did not happen ({reason}): "
                                          "asking again", warning=True)
    retried = StageRecord(stage.action, ctx.now, stage.attempt + 1, reason=stage.reason)
    out.set_stage(retried)
    _prepare_restart(replace(ctx, stage=retried, history=tuple(out.history)), out, rule)


def _recover(ctx: NodeContext, out: Outcome) -> None:
    stage, view, rule = ctx.stage, ctx.view, ctx.rule()
    assert stage is not None
    if stage.action in REPAIR_ACTIONS and stage.request is not None:
        out.history_end(stage.action, "success")
        out.finished.append((stage.action, "success"))
    out.history_recovered()
    _clear_requests(ctx, out)
    out.set_state(State.ABSENT)
    out.set_fault(None)
    out.set_stage(None)
    released = []
    if view.annotations.get(CORDONED_ANNOTATION) == "true":
        out.annotate(CORDONED_ANNOTATION, None)
        if view.unschedulable:
            out.unschedulable = False
            released.append("uncordoned")
    key = rule.taint.key if rule is not None else None
    if key is not None and any(t.key == key for t in view.taints):
        out.taints = tuple(t for t in view.taints if t.key != key)
        released.append(f"taint {key} removed")
    out.event("GPURemediationRecovered", f"{_describe(ctx.record())}: the validator passed; "
              + (", ".join(released) or "left as it was (not cordoned by the remediation)"))
    out.say("recovered")


# --- the states ---------------------------------------------------------------------------------------------------


def _held(ctx: NodeContext, out: Outcome) -> None:
    why = f"held by the driver upgrade ({ctx.view.upgrade_state})"
    if ctx.state not in (State.ABSENT, State.OBSERVING, State.DEFERRED):
        out.say(f"{why}: no step until the upgrade lets the node go")
        return
    fault = ctx.primary
    if fault is None:
        _clear_entry(ctx, out)
        return
    if ctx.state is not State.OBSERVING:
        out.event("GPURemediationHeld", f"{_describe(fault.record)}: not remediated while {why}")
    out.set_state(State.OBSERVING)
    out.set_fault(fault.record)
    out.say(f"{why}: observed only")


def _clear_entry(ctx: NodeContext, out: Outcome) -> None:
    if ctx.state in (State.OBSERVING, State.DEFERRED):
        out.event("GPUFaultCleared", f"{_describe(ctx.fault)}: the fault no longer holds")
    out.set_state(State.ABSENT)
    out.set_fault(None)
    out.say("healthy" if not ctx.stale else f"healthy (stale conditions ignored: {', '.join(ctx.stale)})")


def _entry(ctx: NodeContext, out: Outcome, budget: Budget) -> None:
    fault = ctx.primary
    if fault is None:
        _clear_entry(ctx, out)
        return
    if ctx.mode is Mode.OBSERVE or fault.rule.observe_only:
        if ctx.state is not State.OBSERVING:
            out.event("GPUFaultObserved", f"{_describe(fault.record)}: observed (remediation mode "
                                          f"{ctx.mode.value}, ladder {', '.join(fault.rule.actions)})")
        out.set_state(State.OBSERVING)
        out.set_fault(fault.record)
        out.say("observed only: remediation is in observe mode or the rule is observe"
                if ctx.mode is Mode.OBSERVE or fault.rule.observe_only else "observed")
        return
    holding = budget.quarantine(ctx.view.pool, spend=not out.dry_run)
    if holding is not None:
        if ctx.state is not State.DEFERRED:
            out.event("GPURemediationDeferred", f"{_describe(fault.record)}: quarantine deferred: "
                                                f"{holding.describe()}", warning=True)
        out.set_state(State.DEFERRED)
        out.set_fault(fault.record)
        out.say(f"deferred: {holding.describe()}; quarantined as soon as it lets go")
        return
    _quarantine(ctx, out, fault)


def _taken_back(ctx: NodeContext, out: Outcome, budget: Budget) -> None:
    """The state label was removed (by a person) while the remediation's annotations or cordon remain."""
    view = ctx.view
    ours_cordoned = view.annotations.get(CORDONED_ANNOTATION) == "true" and view.unschedulable
    rule = ctx.rule()
    ours_tainted = rule is not None and any(t.key == rule.taint.key for t in view.taints)
    if not (ours_cordoned or ours_tainted):
        for key in (FAULT_ANNOTATION, STAGE_ANNOTATION, CORDONED_ANNOTATION, *_REQUESTS):
            out.annotate(key, None)
        out.labels.update(_operand_labels(ctx, pause=False))
        out.say("released by a person: the remediation's annotations removed")
        return
    if not budget.slot(spend=not out.dry_run):
        out.say(f"handed back by a person: waits for a remediation slot (maxConcurrent "
                f"{ctx.policy.max_concurrent}) to validate")
        return
    stage = ctx.stage or StageRecord("cordon", ctx.now)
    if ctx.fault is None and ctx.primary is not None:
        out.set_fault(ctx.primary.record)
    _to_validating(ctx, out, replace(stage, started=ctx.now))


def _quarantined(ctx: NodeContext, out: Outcome, rule: EffectiveRule, budget: Budget) -> None:
    stage = ctx.stage
    assert stage is not None
    if not ctx.fault_present:
        if budget.slot(spend=not out.dry_run):
            _to_validating(ctx, out, stage)
        else:
            out.say(f"the fault cleared: waits for a remediation slot (maxConcurrent {ctx.policy.max_concurrent})")
        return
    rung = _next_rung(ctx, rule, stage.action)
    if rung in (None, "needs-human") or ctx.mode is Mode.OBSERVE:
        _advance(ctx, out, rule, stage.action, None)
        return
    if not budget.slot(spend=not out.dry_run):
        out.say(f"quarantined: waits for a remediation slot (maxConcurrent {ctx.policy.max_concurrent}) to {rung}")
        return
    _enter(ctx, out, rung, None)


def _draining(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage = ctx.stage
    assert stage is not None
    if not ctx.fault_present and stage.reason is None:
        _to_validating(ctx, out, stage)
        return
    if _drain_pass(ctx, out, rule, _drain_scope(ctx, rule), stage.started):
        _advance(ctx, out, rule, "drain", None)
        if out.state is not State.DRAINING:
            out.finished.append(("drain", "success"))


def _prepare_reset(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage, record = ctx.stage, ctx.record()
    assert stage is not None
    if not ctx.fault_present and stage.reason is None:
        _to_validating(ctx, out, stage)
        return
    if record is None or not record.gpus:
        _rung_failed(ctx, out, rule, "the fault names no GPU to reset")
        return
    if not _attempts_left(ctx, out):
        return
    pause = _operand_labels(ctx, pause=True)
    if pause or ctx.view.operand_pods > 0:
        # the pause is written first; the pods are counted only once the node shows it
        out.labels.update(pause)
        if ctx.now >= stage.started + ctx.policy.timeouts.reset_gpu_seconds:
            _rung_failed(ctx, out, rule, f"{ctx.view.operand_pods} paused operand pods still run")
            return
        out.wake(ctx.now + POLL_SECONDS)
        out.say(f"reset: waits for the operands' pods to stop ({ctx.view.operand_pods} left)")
        return
    attempt = _attempt(ctx, stage)
    request = request_id(ctx.name, record.since, "reset-gpu", attempt)
    gpus = tuple(g.uuid for g in record.gpus)
    out.set_stage(replace(stage, attempt=attempt, request=request, acted=ctx.now))
    out.annotate(RESET_RESULT_ANNOTATION, None)
    out.annotate(RESET_REQUEST_ANNOTATION, format_reset_request(ResetRequest(request, gpus)))
    out.local = LocalRequest(ctx.name, "reset-gpu", request, gpus)
    out.history_start("reset-gpu")
    out.started.append("reset-gpu")
    out.event("GPURemediationResetRequested", f"{_describe(record)}: GPU reset asked of the node agent "
                                              f"(request {request}, attempt {attempt})")
    out.wake(ctx.now + ctx.policy.timeouts.reset_gpu_seconds)
    out.say(f"reset {', '.join(gpus)}: waits for the node agent's result")


def _await_reset(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage = ctx.stage
    assert stage is not None
    acted = stage.acted if stage.acted is not None else stage.started
    read = parse_reset_result(ctx.view.annotations.get(RESET_RESULT_ANNOTATION))
    out.problems += [read.problem] if read.problem else []
    result = read.value if read.value is not None and read.value.request == stage.request else None
    timeout = ctx.policy.timeouts.reset_gpu_seconds
    if result is not None and result.succeeded:
        _to_validating(ctx, out, stage)
    elif result is not None:
        _rung_failed(ctx, out, rule, f"the reset failed: {result.reason}")
    elif ctx.now >= acted + timeout:
        _rung_failed(ctx, out, rule, f"no reset result within {timeout} s")
    else:
        out.wake(acted + timeout)
        out.say(f"reset: waits for the node agent's result (request {stage.request})")


def _prepare_restart(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage, view, record = ctx.stage, ctx.view, ctx.record()
    assert stage is not None
    action = stage.action
    if not ctx.fault_present and stage.reason is None:
        _to_validating(ctx, out, stage)
        return
    if not _attempts_left(ctx, out):
        return
    interval = ctx.policy.min_reboot_interval_seconds
    last = max((e.at for e in ctx.history if e.action in WHOLE_NODE_ACTIONS), default=None)
    ready_at = last + interval if last is not None and interval else stage.started
    if ctx.now < ready_at:
        out.wake(ready_at)
        out.say(f"{action}: waits until {ready_at:.0f} (minRebootIntervalSeconds {interval} since the last one)")
        return
    if "drain" in rule.actions and not _drain_pass(ctx, out, rule, (), max(stage.started, ready_at)):
        return
    out.drain = None
    if not view.boot_id:
        _rung_failed(ctx, out, rule, "the node reports no boot ID, so its reboot could not be told")
        return
    attempt = _attempt(ctx, stage)
    request = request_id(ctx.name, record.since if record else 0.0, action, attempt)
    out.set_stage(replace(stage, attempt=attempt, request=request, boot_id=view.boot_id, acted=ctx.now))
    out.history_start(action)
    out.started.append(action)
    how = "the node agent"
    if ctx.policy.cloud.aks_auto_repair and view.aks_repairs:
        out.set_state(State.REPAIRING)
        how = "AKS node auto-repair (the node is NotReady)"
    elif ctx.policy.cloud.provider is not None:
        out.cloud = CloudRequest(ctx.name, action, request)
        how = f"the cloud ({ctx.policy.cloud.provider})"
    else:
        out.annotate(REBOOT_REQUEST_ANNOTATION, request)
        out.local = LocalRequest(ctx.name, action, request)
    out.event("GPURemediationRestartRequested", f"{_describe(record)}: {action} asked of {how} "
                                                f"(request {request}, attempt {attempt})")
    timeout = ctx.policy.timeouts.aks_repair_seconds if out.state is State.REPAIRING else \
        ctx.policy.timeouts.of(action)
    out.wake(ctx.now + timeout)
    out.say(f"{action}: waits for a new boot ID (asked of {how})")


def _await_restart(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage, view = ctx.stage, ctx.view
    assert stage is not None
    acted = stage.acted if stage.acted is not None else stage.started
    action, handed = stage.action, ctx.state is State.REPAIRING
    if view.boot_id and stage.boot_id and view.boot_id != stage.boot_id:
        _to_validating(ctx, out, stage)
        return
    timeout = ctx.policy.timeouts.aks_repair_seconds if handed else ctx.policy.timeouts.of(action)
    if ctx.now >= acted + timeout:
        if handed:
            out.history_end(action, "failed: AKS node auto-repair did not bring the node back")
            out.finished.append((action, "failed"))
            _to_needs_human(ctx, out, f"AKS node auto-repair did not bring the node back within {timeout} s")
        elif view.ready:
            _retry(ctx, out, rule, f"the node stayed up on boot ID {view.boot_id} for {timeout} s")
        else:
            _rung_failed(ctx, out, rule, f"the node did not boot again within {timeout} s")
        return
    out.wake(acted + timeout)
    out.say(f"{action}: waits for a new boot ID (request {stage.request})")
    feedback = view.cloud
    if handed or feedback is None or feedback.request != stage.request:
        return
    if feedback.outcome == "failed" and not feedback.retryable:
        _rung_failed(ctx, out, rule, f"the cloud did not {action} it: {feedback.reason or 'failed'}")
    elif feedback.outcome in _RETRY_OUTCOMES or (feedback.outcome == "failed" and feedback.retryable):
        retry_at = feedback.at + (feedback.retry_after_seconds or CLOUD_RETRY_SECONDS)
        if ctx.now >= retry_at:
            out.cloud = CloudRequest(ctx.name, action, stage.request or "")
            out.say(f"{action}: asked of the cloud again after {feedback.outcome}")
        else:
            out.wake(retry_at)
            out.say(f"{action}: the cloud answered {feedback.outcome}; asks again at {retry_at:.0f}")


def _validating(ctx: NodeContext, out: Outcome, rule: EffectiveRule) -> None:
    stage, view = ctx.stage, ctx.view
    assert stage is not None and stage.validating is not None
    back = [f for f in ctx.active if not f.rule.observe_only and f.record.since >= stage.started]
    if back:
        _rung_failed(ctx, out, rule, f"the fault came back: {_describe(back[0].record)}")
        return
    fresh = view.validator_ready and (view.validator_ready_since or 0.0) >= stage.validating
    if fresh and view.ready and not ctx.fault_present:
        _recover(ctx, out)
        return
    timeout = ctx.policy.timeouts.validation_seconds
    waiting = [why for why, ok in (("a validator pod Ready since the repair", fresh), ("the node Ready", view.ready),
                                   ("the fault condition cleared", not ctx.fault_present)) if not ok]
    if ctx.now >= stage.validating + timeout:
        _rung_failed(ctx, out, rule, f"validation did not pass within {timeout} s (no {', no '.join(waiting)})")
        return
    out.restart_validator = RestartValidator(ctx.name, stage.validating)
    out.wake(stage.validating + timeout)
    out.say(f"validate: waits for {', '.join(waiting)}")


def _lost_stage(ctx: NodeContext, out: Outcome, rule: EffectiveRule | None) -> None:
    """In remediation without a readable stage (or fault): start the state's rung again where that is harmless."""
    fault = ctx.primary
    if rule is not None and fault is not None and ctx.state is State.QUARANTINED:
        out.set_fault(ctx.record())
        out.set_stage(StageRecord(_quarantine_rung(rule), ctx.now))
        out.say("quarantined (its stage was unreadable and is written again)")
    elif rule is not None and ctx.state in (State.DRAINING, State.VALIDATING):
        out.set_fault(ctx.record())
        stage = StageRecord("drain" if ctx.state is State.DRAINING else _quarantine_rung(rule), ctx.now)
        if ctx.state is State.DRAINING:
            out.set_stage(stage)
            out.say("draining again (its stage was unreadable)")
        else:
            _to_validating(ctx, out, stage)
    else:
        _to_needs_human(ctx, out, f"its stage or fault annotation is unreadable while {ctx.state.value}: what was "
                                  "asked of the node cannot be told")


def _in_remediation(ctx: NodeContext, out: Outcome, budget: Budget) -> None:
    stage, rule = ctx.stage, ctx.rule()
    if stage is None or rule is None or (ctx.fault is None and ctx.primary is None):
        _lost_stage(ctx, out, rule)
        return
    if ctx.fault is None:
        out.set_fault(ctx.record())
    expected = State.VALIDATING if stage.validating is not None else RUNG_STATES[stage.action]
    if not (ctx.state is State.REPAIRING and stage.action in WHOLE_NODE_ACTIONS) and ctx.state is not expected:
        # a label that disagrees with the stage (edited by hand): the stage says what was done; past quarantine it
        # takes a remediation slot like any other node
        if expected in REMEDIATING and ctx.state not in REMEDIATING and not budget.slot(spend=not out.dry_run):
            out.say(f"its label says {ctx.state.value}, its stage {expected.value}: waits for a remediation slot")
            return
        out.set_state(expected)
    if stage.validating is not None:
        _validating(ctx, out, rule)
    elif stage.action in QUARANTINE_ACTIONS:
        _quarantined(ctx, out, rule, budget)
    elif stage.action == "drain":
        _draining(ctx, out, rule)
    elif stage.action == "reset-gpu":
        (_prepare_reset if stage.request is None else _await_reset)(ctx, out, rule)
    elif stage.action in WHOLE_NODE_ACTIONS:
        (_prepare_restart if stage.request is None else _await_restart)(ctx, out, rule)
    else:
        out.set_state(State.NEEDS_HUMAN)
        out.say(f"needs a person ({stage.reason or 'see its Events'})")


def _cordon_owner(ctx: NodeContext, out: Outcome) -> None:
    """Someone uncordoned a node the remediation cordoned: it no longer owns that cordon, and says so."""
    view = ctx.view
    if (view.annotations.get(CORDONED_ANNOTATION) == "true" and not view.unschedulable and out.unschedulable is None
            and out.state in QUARANTINED and CORDONED_ANNOTATION not in out.annotations):
        out.annotate(CORDONED_ANNOTATION, None)
        out.event("GPURemediationUncordoned", f"{_describe(ctx.record())}: uncordoned by someone else while "
                                              f"{out.state.value}; it will not be cordoned again", warning=True)


def _leftovers(ctx: NodeContext) -> bool:
    notes = ctx.view.annotations
    return any(key in notes for key in (FAULT_ANNOTATION, STAGE_ANNOTATION, CORDONED_ANNOTATION, *_REQUESTS))


def step(ctx: NodeContext, budget: Budget) -> Outcome:
    """The node's next step (what to write, what to do, what to report)."""
    rule = ctx.rule()
    out = Outcome(ctx, ctx.mode is Mode.DRY_RUN or (rule is not None and rule.dry_run))
    if ctx.held_by_upgrade:
        _held(ctx, out)
        return out
    if ctx.state is State.ABSENT and _leftovers(ctx):
        _taken_back(ctx, out, budget)
    elif ctx.state in (State.ABSENT, State.OBSERVING, State.DEFERRED):
        _entry(ctx, out, budget)
    elif ctx.state is State.NEEDS_HUMAN:
        reason = ctx.stage.reason if ctx.stage is not None and ctx.stage.reason else "see its Events"
        out.say(f"needs a person ({reason}); when fixed, remove the label {STATE_LABEL} to validate and uncordon it")
    else:
        _in_remediation(ctx, out, budget)
    _cordon_owner(ctx, out)
    return out
