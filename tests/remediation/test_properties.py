"""Properties of the planner over arbitrary node states: whatever the labels, annotations, conditions, feedback
and policy (garbage included), one plan

- never moves more nodes past quarantine than `maxConcurrent` leaves room for;
- never cordons or taints a node while a breaker over it holds (per pool and cluster-wide);
- never uncordons a node the remediation did not cordon;
- takes no action at all on a node the driver upgrade holds;
- only moves a node forward on its ladder (or to healthy, or to a person);
- is pure, and idempotent: applying its patches and planning again (a restarted leader, without the actuator's
  memory) never asks the cloud or the node agent a second time and never takes a node back to where it was;
- never raises.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpu_operator.faults import ACTIONS
from gpu_operator.remediation import (
    Attempts,
    Breaker,
    CloudFeedback,
    CloudSpec,
    DrainFeedback,
    Mode,
    NodeView,
    PoolPolicy,
    RemediationPlan,
    RemediationPolicy,
    Rule,
    State,
    Taint,
    apply_patch,
    plan,
)
from gpu_operator.remediation.encoding import FaultRecord, StageRecord, format_fault, format_stage, parse_stage
from gpu_operator.remediation.vocabulary import (
    CORDONED_ANNOTATION,
    FAULT_ANNOTATION,
    HISTORY_ANNOTATION,
    QUARANTINED,
    REMEDIATING,
    RESET_RESULT_ANNOTATION,
    STAGE_ANNOTATION,
    STATE_LABEL,
    UPGRADE_HOLDS,
    UPGRADE_STATE_LABEL,
)
from gpu_operator.remediation.steps import RUNG_STATES
from tests.remediation.simulation import CONDITIONS, GPU, fault

NOW = 10_000.0
POOLS = ("a", "b", "")
_STATES = {s.value: s for s in State}
_TIMES = st.sampled_from([0.0, 500.0, NOW - 4000, NOW - 700, NOW - 30, NOW - 1, NOW])


def _stage(draw: st.DrawFn) -> str | None:
    kind = draw(st.sampled_from(["none", "valid", "valid", "valid", "garbage"]))
    if kind == "none":
        return None
    if kind == "garbage":
        return draw(st.sampled_from(["{", "[]", '{"action": "reboot"}', '{"action":"x","started":1}', "null"]))
    return format_stage(StageRecord(
        action=draw(st.sampled_from(ACTIONS[1:])), started=draw(_TIMES), attempt=draw(st.integers(0, 4)),
        request=draw(st.sampled_from([None, "req1", "req2"])), boot_id=draw(st.sampled_from([None, "boot-0"])),
        acted=draw(st.sampled_from([None, NOW - 4000, NOW - 10])),
        validating=draw(st.sampled_from([None, None, NOW - 4000, NOW - 10])), reason=None))


def _annotations(draw: st.DrawFn) -> dict[str, str]:
    notes: dict[str, str] = {}
    stage = _stage(draw)
    if stage is not None:
        notes[STAGE_ANNOTATION] = stage
    fault_kind = draw(st.sampled_from(["none", "valid", "valid", "garbage"]))
    if fault_kind == "valid":
        name = draw(st.sampled_from(sorted(CONDITIONS)))
        notes[FAULT_ANNOTATION] = json.dumps({"class": name, "condition": CONDITIONS[name][0], "reason": "r",
                                              "gpus": [{"uuid": GPU, "pci": "0000:17:00.0"}],
                                              "since": draw(_TIMES)})
    elif fault_kind == "garbage":
        notes[FAULT_ANNOTATION] = "{oops"
    history = draw(st.lists(st.tuples(st.sampled_from(["reset-gpu", "reboot", "reimage", "validate", "drain"]),
                                      _TIMES, st.sampled_from(["pending", "success", "failed: x", "passed"])),
                            max_size=5))
    if history:
        notes[HISTORY_ANNOTATION] = json.dumps([{"action": a, "at": t, "result": r} for a, t, r in history])
    if draw(st.booleans()):
        notes[CORDONED_ANNOTATION] = draw(st.sampled_from(["true", "true", "false"]))
    if draw(st.integers(0, 3)) == 0:
        notes[RESET_RESULT_ANNOTATION] = draw(st.sampled_from(["req1:success", "req1:failed:busy", "req2:success",
                                                               "garbage"]))
    return notes


@st.composite
def views(draw: st.DrawFn, name: str) -> NodeView:
    labels = {"nvidia.com/gpu.deploy.device-plugin": draw(st.sampled_from(["true", "paused-for-gpu-reset"]))}
    state = draw(st.sampled_from([*[s.value for s in State], "bogus"]))
    if state:
        labels[STATE_LABEL] = state
    upgrade = draw(st.sampled_from(["", "", "", "upgrade-done", "upgrade-required", "drain-required",
                                    "upgrade-failed"]))
    if upgrade:
        labels[UPGRADE_STATE_LABEL] = upgrade
    fresh = draw(st.integers(0, 2)) == 0  # a node outside any remediation, as most are: with a new fault
    conditions = []
    for fault_class in draw(st.lists(st.sampled_from(sorted(CONDITIONS)), min_size=int(fresh), max_size=2,
                                     unique=True)):
        condition = fault(fault_class, draw(_TIMES))
        if draw(st.integers(0, 4)) == 0:
            condition = replace(condition, status="False")
        if draw(st.integers(0, 9)) == 0:
            condition = replace(condition, last_transition_time=None, message="no GPU named")
        conditions.append(condition)
    notes = {} if fresh else _annotations(draw)
    if fresh:
        labels[STATE_LABEL] = draw(st.sampled_from(["", "observing", "deferred"]))
    stage = parse_stage(notes.get(STAGE_ANNOTATION)).value
    if stage is not None and draw(st.integers(0, 9)) < 7:  # mostly a label that agrees, as the planner writes it
        labels[STATE_LABEL] = (State.VALIDATING if stage.validating is not None else RUNG_STATES[stage.action]).value
    request = stage.request if stage is not None and stage.request else "other"
    drain = draw(st.sampled_from([None, DrainFeedback((), 0, NOW - 5), DrainFeedback((GPU,), 0, NOW - 5),
                                  DrainFeedback((), 3, NOW - 5, "pdb")]))
    cloud = draw(st.sampled_from([None, CloudFeedback(request, "reboot", "throttled", NOW - 100, True, 10.0),
                                  CloudFeedback(request, "reboot", "failed", NOW - 1, False, None, "denied"),
                                  CloudFeedback(request, "reboot", "pending", NOW - 1)]))
    our_taint = [Taint("nvidia.com/gpu-fault", "NoSchedule", "x")] if draw(st.booleans()) else []
    return NodeView(
        name, pool=draw(st.sampled_from(POOLS)), labels=labels, annotations=notes, conditions=tuple(conditions),
        unschedulable=draw(st.booleans()), taints=tuple(our_taint), boot_id=draw(st.sampled_from(["boot-0", "boot-1",
                                                                                                  ""])),
        ready=draw(st.booleans()), validator_ready=draw(st.booleans()),
        validator_ready_since=draw(st.sampled_from([None, NOW - 5000, NOW - 5])),
        operand_pods=draw(st.integers(0, 2)), aks_repairs=draw(st.booleans()), drain=drain, cloud=cloud)


@st.composite
def policies(draw: st.DrawFn) -> RemediationPolicy:
    breaker = st.builds(Breaker, st.sampled_from([None, None, 1, 2, 3]), st.sampled_from([None, None, 10, 50]))
    rules = {}
    if draw(st.booleans()):
        rules["fallen-off-bus"] = Rule(draw(st.sampled_from([None, ("cordon", "taint", "drain", "reboot"),
                                                             ("taint", "reset-gpu", "needs-human"), ("observe",)])),
                                       dry_run=draw(st.integers(0, 4)) == 0)
    cloud = draw(st.sampled_from([CloudSpec(), CloudSpec("azure"), CloudSpec("azure", aks_auto_repair=True)]))
    return RemediationPolicy(
        mode=draw(st.sampled_from([Mode.ENFORCE, Mode.ENFORCE, Mode.OBSERVE, Mode.DRY_RUN])), rules=rules,
        attempts=Attempts(draw(st.sampled_from([None, 1, 3])), 3600), max_concurrent=draw(st.integers(1, 3)),
        min_reboot_interval_seconds=draw(st.sampled_from([0, 600])), breaker=draw(breaker),
        pools={"a": PoolPolicy(mode=draw(st.sampled_from([None, Mode.ENFORCE, Mode.DRY_RUN])),
                               breaker=draw(st.one_of(st.none(), breaker)))},
        cloud=cloud)


@st.composite
def fleets(draw: st.DrawFn) -> dict[str, NodeView]:
    count = draw(st.integers(1, 9))
    return {f"n{i}": draw(views(f"n{i}")) for i in range(count)}


def _progress(view: NodeView) -> tuple[int, int, int] | None:
    """A node's place on its ladder: (rung, attempt, phase); None outside a remediation or when unreadable."""
    state = _STATES.get(view.labels.get(STATE_LABEL, ""))
    stage = parse_stage(view.annotations.get(STAGE_ANNOTATION)).value
    if state not in QUARANTINED or state is State.NEEDS_HUMAN or stage is None:
        return None
    phase = 2 if stage.validating is not None else 1 if stage.request is not None else 0
    return ACTIONS.index(stage.action), stage.attempt, phase


def _consistent(view: NodeView) -> bool:
    """The state label agrees with the stage, as every node the planner wrote does (not one edited by hand)."""
    state = _STATES.get(view.labels.get(STATE_LABEL, ""))
    stage = parse_stage(view.annotations.get(STAGE_ANNOTATION)).value
    if state not in QUARANTINED or stage is None:
        return True
    if stage.validating is not None:
        return state is State.VALIDATING
    return state is RUNG_STATES[stage.action] or (state is State.REPAIRING and stage.action in ("reboot", "reimage"))


def _applied(nodes: dict[str, NodeView], result: RemediationPlan, restart: bool) -> dict[str, NodeView]:
    after = {name: apply_patch(view, result.nodes[name].patch) for name, view in nodes.items()}
    return {name: replace(view, drain=None, cloud=None) for name, view in after.items()} if restart else after


def _newly_quarantined(before: NodeView, node_plan: Any) -> bool:
    patch = node_plan.patch
    took = patch is not None and (patch.unschedulable is True or (
        patch.taints is not None and len(patch.taints) > len(before.taints)))
    return took or (node_plan.before in (State.ABSENT, State.OBSERVING, State.DEFERRED)
                    and node_plan.after is State.QUARANTINED)


def _fresh(name: str, pool: str) -> NodeView:
    return NodeView(name, pool=pool, conditions=(fault("fallen-off-bus", NOW - 30),), boot_id="boot-0")


#: A pool whose own breaker is stricter than the cluster's (none), and more faults in it than it lets through.
_POOL_BREAKER = ({f"n{i}": _fresh(f"n{i}", "a") for i in range(3)},
                 RemediationPolicy(mode=Mode.ENFORCE, breaker=Breaker(), pools={"a": PoolPolicy(
                     breaker=Breaker(max_nodes=1))}))
#: A node someone else cordoned, about to pass its validation.
_OTHERS_CORDON = ({"n0": NodeView(
    "n0", labels={STATE_LABEL: "validating"}, unschedulable=True, boot_id="boot-0", validator_ready=True,
    validator_ready_since=NOW - 5, annotations={STAGE_ANNOTATION: format_stage(StageRecord(
        "reboot", NOW - 100, 1, "req1", "boot-0", NOW - 90, NOW - 10)), FAULT_ANNOTATION: format_fault(
            FaultRecord("fallen-off-bus", "GPUFallenOffBus", "XID79", (), NOW - 200))})},
    RemediationPolicy(mode=Mode.ENFORCE))

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(fleets(), policies())
@example(*_POOL_BREAKER)
def test_caps_and_breakers_hold(nodes: dict[str, NodeView], policy: RemediationPolicy) -> None:
    result = plan(nodes, policy, NOW)
    plans = result.nodes.values()
    remediating = sum(p.before in REMEDIATING for p in plans)
    entering = sum(p.before not in REMEDIATING and p.after in REMEDIATING for p in plans)
    assert entering <= max(0, policy.max_concurrent - remediating)
    new = [name for name, p in result.nodes.items() if _newly_quarantined(nodes[name], p)]
    scopes: list[tuple[str, Breaker]] = [("", policy.breaker)] + [
        (pool, breaker) for pool in POOLS if pool for breaker in [policy.pool_breaker(pool)] if breaker]
    for scope, breaker in scopes:
        members = [n for n, v in nodes.items() if scope == "" or v.pool == scope]
        limit = breaker.limit(len(members))
        if limit is None:
            continue
        quarantined = sum(result.nodes[n].before in QUARANTINED for n in members)
        assert sum(n in new for n in members) <= max(0, limit - quarantined), (scope, limit, quarantined)


@_SETTINGS
@given(fleets(), policies())
@example(*_OTHERS_CORDON)
def test_no_uncordon_of_others_no_step_under_an_upgrade_and_only_forward(nodes: dict[str, NodeView],
                                                                       policy: RemediationPolicy) -> None:
    result = plan(nodes, policy, NOW)
    after = _applied(nodes, result, restart=False)
    for name, node_plan in result.nodes.items():
        before, patch = nodes[name], node_plan.patch
        if patch is not None and patch.unschedulable is False:
            assert before.annotations.get(CORDONED_ANNOTATION) == "true"
        if before.upgrade_state in UPGRADE_HOLDS:
            assert (node_plan.drain, node_plan.cloud, node_plan.local, node_plan.restart_validator) == (None,) * 4
            if patch is not None:
                assert patch.unschedulable is None and patch.taints is None
                assert set(patch.labels) <= {STATE_LABEL} and set(patch.annotations) <= {FAULT_ANNOTATION}
                assert patch.labels.get(STATE_LABEL, "observing") in ("observing", None)
        was, now = _progress(before), _progress(after[name])
        if node_plan.before in QUARANTINED and node_plan.before is not State.NEEDS_HUMAN:
            assert node_plan.after not in (State.OBSERVING, State.DEFERRED)
        if was is not None and now is not None:
            assert now >= was, (name, was, now)


@_SETTINGS
@given(fleets(), policies())
def test_a_restarted_leader_plans_the_same_step_and_never_repeats_one(nodes: dict[str, NodeView],
                                                                      policy: RemediationPolicy) -> None:
    first = plan(nodes, policy, NOW)
    assert plan(nodes, policy, NOW) == first
    after = _applied(nodes, first, restart=True)
    second = plan(after, policy, NOW)
    for name, view in after.items():  # a request the stage records is asked again only as a new attempt
        stage = parse_stage(view.annotations.get(STAGE_ANNOTATION)).value
        cloud = second.nodes[name].cloud
        if stage is not None and stage.request is not None and cloud is not None:
            assert cloud.request != stage.request
    for name, one in first.nodes.items():
        two = second.nodes[name]
        if one.cloud is not None:
            assert two.cloud is None
        if one.local is not None:
            assert two.local is None
        if one.patch is not None and one.before is not one.after and not one.dry_run and _consistent(nodes[name]):
            assert two.after is not one.before or one.before in (State.ABSENT, State.NEEDS_HUMAN), (name, one, two)
        was, now = _progress(after[name]), _progress(apply_patch(after[name], two.patch))
        if was is not None and now is not None:
            assert now >= was
