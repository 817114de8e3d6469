"""The planner, scenario by scenario: each of issue 26's acceptance cases on a simulated fleet, and the edges.

The fleet (tests/remediation/simulation.py) carries plans out in the actuator's order (patch, then actions) and
answers as the node agent does. Where we follow NVIDIA: operands are paused for a reset as mig-parted v0.15.0
pkg/mig/reconfigure/reconfigure.go pauses them for a MIG change (its set of operand labels, `maybeSetPaused` /
`maybeSetTrue`, the client label only where the node has it; but only `true` labels are paused and only our pause
value is put back), the GPUs are touched only once the paused operands' pods are gone (`waitForPodDeletion`), and
the validator pod is restarted after the GPUs changed (`restartValidatorPod`); the drain modes are NVSentinel
node-drainer's Immediate (evict), DeleteAfterTimeout (delete) and AllowCompletion (wait-for-completion).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from gpu_operator.remediation import (
    Attempts,
    Breaker,
    CloudSpec,
    DrainMode,
    DrainSpec,
    Mode,
    NodeCondition,
    PoolPolicy,
    RemediationPolicy,
    Rule,
    State,
    Taint,
    apply_patch,
    plan,
)
from gpu_operator.remediation.vocabulary import (
    CORDONED_ANNOTATION,
    FAULT_ANNOTATION,
    HISTORY_ANNOTATION,
    REBOOT_REQUEST_ANNOTATION,
    RESET_REQUEST_ANNOTATION,
    STAGE_ANNOTATION,
    STATE_LABEL,
)
from tests.remediation.simulation import GPU, Behaviour, Fleet, fault, node

ENFORCE = RemediationPolicy(mode=Mode.ENFORCE, min_reboot_interval_seconds=0)


def _states(fleet: Fleet) -> list[str]:
    return [p.nodes["n1"].after.value for p in fleet.plans]


def _walk(fleet: Fleet, rounds: int = 12) -> list[str]:
    """The distinct states n1 went through, in order."""
    fleet.run(rounds)
    seen: list[str] = []
    for state in _states(fleet):
        if not seen or seen[-1] != state:
            seen.append(state)
    return seen


def test_xid_79_is_cordoned_drained_rebooted_validated_and_uncordoned() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    assert _walk(fleet) == ["quarantined", "draining", "rebooting", "validating", ""]
    view = fleet.views["n1"]
    assert not view.unschedulable and fleet.reboots == {"n1": 1}
    assert set(view.annotations) == {HISTORY_ANNOTATION}
    history = json.loads(view.annotations[HISTORY_ANNOTATION])
    assert [(e["action"], e["result"]) for e in history] == [("reboot", "success"), ("validate", "passed")]


def test_the_first_plan_cordons_and_reports_the_latency_from_the_condition() -> None:
    result = plan({"n1": node("n1", fault("fallen-off-bus", 998.5))}, ENFORCE, 1000.0)
    patch = result.nodes["n1"].patch
    assert patch is not None and patch.unschedulable is True
    assert patch.labels[STATE_LABEL] == "quarantined" and patch.annotations[CORDONED_ANNOTATION] == "true"
    assert result.metrics.cordon_latency_seconds == (1.5,)
    assert result.metrics.quarantined == {("h100", "fallen-off-bus"): 1}
    [event] = result.events
    assert event.warning and GPU in event.message and "0000:17:00.0" in event.message


def test_xid_48_takes_the_reset_path_with_a_partial_drain_and_paused_operands() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("reset-required", 990.0))})
    assert _walk(fleet) == ["quarantined", "draining", "resetting", "validating", ""]
    drains = [p.nodes["n1"].drain for p in fleet.plans if p.nodes["n1"].drain is not None]
    assert drains and all(d.gpus == (GPU,) for d in drains)  # only the pods of the faulty GPU
    paused = [p.nodes["n1"].patch.labels for p in fleet.plans if p.nodes["n1"].after is State.RESETTING
              and p.nodes["n1"].patch is not None and p.nodes["n1"].patch.labels]
    assert paused[0]["nvidia.com/gpu.deploy.device-plugin"] == "paused-for-gpu-reset"
    assert "nvidia.com/gpu.deploy.client" not in paused[0]  # only labels the node has, and only `true` ones
    assert fleet.views["n1"].labels["nvidia.com/gpu.deploy.device-plugin"] == "true"  # restored
    assert len(fleet.resets) == 1 and fleet.reboots == {}
    [validating] = [p.nodes["n1"] for p in fleet.plans if p.nodes["n1"].after is State.VALIDATING]
    assert validating.restart_validator is not None and validating.patch.labels[
        "nvidia.com/gpu.deploy.device-plugin"] == "true"  # the operands come back with the validation


def test_the_reset_is_asked_only_once_the_paused_operands_stopped() -> None:
    view = node("n1", fault("reset-required", 990.0), operand_pods=3)
    fleet = Fleet(ENFORCE, {"n1": view}, {"n1": Behaviour(operands_stop=False)})
    fleet.run(5)
    assert fleet.state("n1") == "resetting" and RESET_REQUEST_ANNOTATION not in fleet.views["n1"].annotations
    assert "waits for the operands' pods to stop (3 left)" in fleet.plans[-1].nodes["n1"].step.next_step
    fleet.views["n1"] = replace(fleet.views["n1"], operand_pods=0)
    fleet.run(1)
    assert fleet.resets


def test_a_failed_reset_climbs_to_a_reboot() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("reset-required", 990.0))}, {"n1": Behaviour(reset="failed")})
    assert _walk(fleet, 14) == ["quarantined", "draining", "resetting", "rebooting", "validating", ""]
    # the reboot drains the rest of the node first: a full drain after the partial one
    scopes = [p.nodes["n1"].drain.gpus for p in fleet.plans if p.nodes["n1"].drain is not None]
    assert scopes[0] == (GPU,) and scopes[-1] == ()
    history = json.loads(fleet.views["n1"].annotations[HISTORY_ANNOTATION])
    assert history[0]["action"] == "reset-gpu" and history[0]["result"].startswith("failed: the reset failed")
    assert fleet.views["n1"].labels["nvidia.com/gpu.deploy.dcgm"] == "true"


def test_a_silent_reset_times_out_and_climbs() -> None:
    policy = replace(ENFORCE, timeouts=replace(ENFORCE.timeouts, reset_gpu_seconds=20))
    fleet = Fleet(policy, {"n1": node("n1", fault("reset-required", 990.0))}, {"n1": Behaviour(reset="silent")})
    assert "rebooting" in _walk(fleet, 14)
    assert "no reset result within 20 s" in fleet.views["n1"].annotations[HISTORY_ANNOTATION]


def test_the_third_recurrence_in_the_window_needs_a_person() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    for recurrence in range(4):
        fleet.run(10)
        assert fleet.state("n1") == ("" if recurrence < 3 else "needs-human")
        fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", fleet.now),))
    assert fleet.reboots == {"n1": 3}
    stage = json.loads(fleet.views["n1"].annotations[STAGE_ANNOTATION])
    assert "3 repairs in the last 86400 s (attempts.max 3)" in stage["reason"]
    assert fleet.views["n1"].unschedulable


def test_fifty_faults_with_a_cap_of_five_never_have_more_than_five_remediating() -> None:
    policy = replace(ENFORCE, max_concurrent=5, breaker=Breaker())
    fleet = Fleet(policy, {f"n{i:02}": node(f"n{i:02}", fault("fallen-off-bus", 900.0 + i)) for i in range(50)})
    first = fleet.round()
    assert sum(p.after is State.QUARANTINED for p in first.nodes.values()) == 50  # all cordoned at once
    for _ in range(120):
        fleet.round()
        remediating = sum(fleet.state(n) in ("draining", "resetting", "rebooting", "reimaging", "repairing",
                                             "validating") for n in fleet.views)
        assert remediating <= 5
    assert all(fleet.state(n) == "" for n in fleet.views) and sum(fleet.reboots.values()) == 50
    # the oldest faults went first
    order = [n for p in fleet.plans for n, np in p.nodes.items() if np.after is State.DRAINING
             and np.before is State.QUARANTINED]
    assert order[:5] == ["n00", "n01", "n02", "n03", "n04"]


def test_a_pool_breaker_of_two_defers_the_third_node_and_uncordons_go_on() -> None:
    policy = replace(ENFORCE, breaker=Breaker(), pools={"h100": PoolPolicy(breaker=Breaker(max_nodes=2))})
    views = {name: node(name, fault("fallen-off-bus", 900.0 + i)) for i, name in enumerate(("a", "b", "c"))}
    views["other"] = node("other", fault("fallen-off-bus", 950.0), pool="a100")
    fleet = Fleet(policy, views)
    first = fleet.round()
    assert [fleet.state(n) for n in ("a", "b", "c", "other")] == ["quarantined", "quarantined", "deferred",
                                                                  "quarantined"]
    [deferred] = [e for e in first.events if e.node == "c"]
    assert deferred.reason == "GPURemediationDeferred" and deferred.warning
    assert "the breaker of pool h100 holds (2 of 2 nodes quarantined)" in deferred.message
    assert not fleet.views["c"].unschedulable
    assert [b.holding for b in first.metrics.breakers if b.pool == "h100"] == [True]
    uncordoned_while_holding = False
    for _ in range(30):
        result = fleet.round()
        if fleet.state("c") == "deferred" and any(p.patch is not None and p.patch.unschedulable is False
                                                  for p in result.nodes.values()):
            uncordoned_while_holding = True
    assert uncordoned_while_holding
    assert all(fleet.state(n) == "" for n in fleet.views) and fleet.reboots["c"] == 1  # it let go by itself
    assert sum(e.reason == "GPURemediationDeferred" for p in fleet.plans for e in p.events) == 1


def test_the_cluster_breaker_counts_a_percentage_rounded_up() -> None:
    policy = replace(ENFORCE, breaker=Breaker(max_percent=10))
    views = {f"n{i:02}": node(f"n{i:02}", *([fault("fallen-off-bus", 900.0 + i)] if i < 5 else []))
             for i in range(25)}
    result = plan(views, policy, 1000.0)
    assert [p.after for p in result.nodes.values()].count(State.QUARANTINED) == 3  # ceil(2.5)
    [status] = result.metrics.breakers
    assert status.holding and status.limit == 3 and status.deferred == 2


def test_needs_human_nodes_count_against_the_breaker() -> None:
    policy = replace(ENFORCE, breaker=Breaker(max_nodes=1))
    stuck = node("stuck", labels={STATE_LABEL: "needs-human"}, unschedulable=True)
    result = plan({"stuck": stuck, "n1": node("n1", fault("fallen-off-bus", 990.0))}, policy, 1000.0)
    assert result.nodes["n1"].after is State.DEFERRED


def test_a_node_cordoned_by_a_person_stays_cordoned() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0), unschedulable=True)})
    assert _walk(fleet)[-1] == ""
    assert fleet.views["n1"].unschedulable
    assert all(p.nodes["n1"].patch is None or p.nodes["n1"].patch.unschedulable is None for p in fleet.plans)


def test_a_node_mid_driver_upgrade_is_not_remediated() -> None:
    view = node("n1", fault("fallen-off-bus", 990.0))
    view = replace(view, labels={**view.labels, "nvidia.com/gpu-driver-upgrade-state": "drain-required"})
    fleet = Fleet(ENFORCE, {"n1": view})
    fleet.run(5)
    assert fleet.state("n1") == "observing" and not fleet.views["n1"].unschedulable and not fleet.reboots
    assert [e.reason for p in fleet.plans for e in p.events] == ["GPURemediationHeld"]
    labels = {**fleet.views["n1"].labels, "nvidia.com/gpu-driver-upgrade-state": "upgrade-done"}
    fleet.views["n1"] = replace(fleet.views["n1"], labels=labels)
    fleet.run(12)
    assert fleet.reboots == {"n1": 1}  # once the upgrade let go


def test_a_node_in_remediation_takes_no_step_while_an_upgrade_holds_it() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(2)
    labels = {**fleet.views["n1"].labels, "nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"}
    fleet.views["n1"] = replace(fleet.views["n1"], labels=labels)
    result = fleet.round()
    assert result.nodes["n1"].patch is None and result.nodes["n1"].drain is None
    assert "held by the driver upgrade (upgrade-failed)" in result.nodes["n1"].step.next_step


@pytest.mark.parametrize("crash_at", range(1, 9))
def test_a_leader_killed_after_any_write_repeats_no_stage_and_doubles_no_reboot(crash_at: int) -> None:
    for cloud in (None, "azure"):
        policy = replace(ENFORCE, cloud=CloudSpec(provider=cloud))
        fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
        writes = iter(range(1, 100))
        fleet.run(20, crash_after=lambda _node, _what: next(writes) == crash_at)
        if fleet.state("n1") == "rebooting":  # recorded, then the leader died before the cloud call
            assert fleet.reboots == {} and fleet.cloud_calls == [] and cloud == "azure"
            fleet.now += policy.timeouts.reboot_seconds  # the boot ID says it never happened: asked again
            fleet.run(10)
        assert fleet.state("n1") == "" and not fleet.views["n1"].unschedulable
        assert fleet.reboots == {"n1": 1}
        assert len({request for _, _, request in fleet.cloud_calls}) == len(fleet.cloud_calls) <= 1
        starts = [a for p in fleet.plans for a in p.metrics.started]
        assert starts.count("drain") == 1


def test_a_restarted_leader_that_lost_the_cloud_answer_waits_for_the_boot_id() -> None:
    policy = replace(ENFORCE, cloud=CloudSpec(provider="azure"))
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(reboot=False)})
    fleet.run(5)
    assert fleet.state("n1") == "rebooting" and len(fleet.cloud_calls) == 1
    fleet.views["n1"] = replace(fleet.views["n1"], cloud=None)  # a new leader
    fleet.run(5)
    assert len(fleet.cloud_calls) == 1  # never asked again blind
    fleet.now += policy.timeouts.reboot_seconds
    fleet.run(2)  # the rung again: the node's (empty) drain, then the call
    # still Ready on the same boot: the reboot never happened, so it is asked again, as a new attempt
    assert fleet.state("n1") == "rebooting" and [a for _, a, _ in fleet.cloud_calls] == ["reboot", "reboot"]
    assert fleet.cloud_calls[0][2] != fleet.cloud_calls[1][2]
    fleet.views["n1"] = replace(fleet.views["n1"], ready=False)  # this time it went down and stayed down
    fleet.now += policy.timeouts.reboot_seconds
    fleet.run(2)
    assert fleet.state("n1") == "reimaging" and fleet.cloud_calls[-1][1] == "reimage"


def test_the_cloud_is_asked_again_after_throttling_and_a_refusal_climbs() -> None:
    policy = replace(ENFORCE, cloud=CloudSpec(provider="azure"))
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))},
                  {"n1": Behaviour(cloud=["throttled", "failed"])})
    fleet.run(12, step=4.0)
    actions = [(action, request) for _, action, request in fleet.cloud_calls]
    assert actions[0] == actions[1] and actions[0][0] == "reboot"  # the same request, after Retry-After
    assert actions[2][0] == "reimage"  # a refused reboot (not retryable) climbs the ladder
    assert fleet.state("n1") == ""


def test_aks_auto_repair_takes_a_notready_node_and_a_timeout_needs_a_person() -> None:
    policy = replace(ENFORCE, cloud=CloudSpec(provider="azure", aks_auto_repair=True))
    view = node("n1", fault("fallen-off-bus", 990.0), ready=False, aks_repairs=True)
    fleet = Fleet(policy, {"n1": view}, {"n1": Behaviour(reboot=False)})
    fleet.run(5)
    assert fleet.state("n1") == "repairing" and fleet.cloud_calls == []
    fleet.now += policy.timeouts.aks_repair_seconds
    fleet.run(1)
    assert fleet.state("n1") == "needs-human"


def test_the_minimum_interval_between_reboots_holds_a_second_reboot() -> None:
    policy = replace(ENFORCE, min_reboot_interval_seconds=600)
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(10)
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", fleet.now),))
    fleet.run(20)
    assert fleet.reboots == {"n1": 1} and fleet.state("n1") == "rebooting"
    assert "minRebootIntervalSeconds 600" in fleet.plans[-1].nodes["n1"].step.next_step
    assert fleet.plans[-1].requeue_after is not None and fleet.plans[-1].requeue_after > 0
    fleet.now += 600
    fleet.run(6)
    assert fleet.reboots == {"n1": 2}


def test_a_stuck_drain_ends_in_needs_human_with_its_reason() -> None:
    policy = replace(ENFORCE, drain=DrainSpec(timeout_seconds=30))
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(blocked=True)})
    fleet.run(12)
    assert fleet.state("n1") == "needs-human" and not fleet.reboots
    reason = json.loads(fleet.views["n1"].annotations[STAGE_ANNOTATION])["reason"]
    assert reason == "the drain did not end within 30 s (2 pods left: a PodDisruptionBudget refused)"


@pytest.mark.parametrize(("mode", "expected"), [
    (DrainMode.EVICT, ["evict"] * 4), (DrainMode.DELETE, ["evict", "evict", "delete", "delete"]),
    (DrainMode.WAIT_FOR_COMPLETION, ["wait"] * 4)])
def test_each_drain_mode_asks_its_pass(mode: DrainMode, expected: list[str]) -> None:
    policy = replace(ENFORCE, drain=DrainSpec(mode=mode, timeout_seconds=100, delete_after_seconds=10))
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(drain_rounds=4)})
    fleet.run(6)
    assert [p.nodes["n1"].drain.mode for p in fleet.plans if p.nodes["n1"].drain is not None][:4] == expected


def test_an_observe_rule_and_a_healthy_node_quarantine_nothing() -> None:
    thermal = node("n1", fault("thermal", 990.0))
    result = plan({"n1": thermal, "n2": node("n2")}, ENFORCE, 1000.0)
    assert result.nodes["n1"].after is State.OBSERVING and result.nodes["n1"].patch.unschedulable is None
    assert result.nodes["n2"].patch is None and result.nodes["n2"].events == ()


def test_the_default_is_observe_mode_that_labels_and_reports_only() -> None:
    fleet = Fleet(RemediationPolicy(), {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(5)
    assert fleet.state("n1") == "observing" and not fleet.views["n1"].unschedulable
    assert [e.reason for p in fleet.plans for e in p.events] == ["GPUFaultObserved"]
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=())
    fleet.run(1)
    assert fleet.state("n1") == "" and FAULT_ANNOTATION not in fleet.views["n1"].annotations


def test_observe_mode_starts_nothing_new_but_lets_a_node_recover() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(1)
    fleet.policy = replace(ENFORCE, mode=Mode.OBSERVE)
    fleet.run(3)
    assert fleet.state("n1") == "quarantined" and not fleet.reboots
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=())
    fleet.run(4)
    assert fleet.state("n1") == "" and not fleet.views["n1"].unschedulable


@pytest.mark.parametrize("policy", [replace(ENFORCE, mode=Mode.DRY_RUN),
                                    replace(ENFORCE, rules={"fallen-off-bus": Rule(dry_run=True)}),
                                    replace(ENFORCE, pools={"h100": PoolPolicy(mode=Mode.DRY_RUN)})])
def test_dry_run_plans_and_reports_but_writes_nothing(policy: RemediationPolicy) -> None:
    result = plan({"n1": node("n1", fault("fallen-off-bus", 990.0))}, policy, 1000.0)
    node_plan = result.nodes["n1"]
    assert node_plan.dry_run and node_plan.patch is None and node_plan.after is State.ABSENT
    assert node_plan.would == ("set quarantined", "cordon")
    [event] = node_plan.events
    assert event.reason == "GPURemediationDryRun" and event.message.startswith("dry run, would: ")
    assert result.metrics.started == () and result.metrics.cordon_latency_seconds == ()


def test_a_stale_fault_from_before_the_last_recovery_is_never_replayed() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(10)
    assert fleet.state("n1") == "" and fleet.reboots == {"n1": 1}
    # an old copy of the condition comes back (an agent that wrote late, a replayed update)
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", 990.0),))
    result = fleet.round()
    assert result.nodes["n1"].patch is None and "stale conditions ignored: GPUFallenOffBus" in \
        result.nodes["n1"].step.next_step
    fleet.run(5)
    assert fleet.reboots == {"n1": 1}


def test_a_fault_that_comes_back_during_validation_fails_the_rung() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))},
                  {"n1": Behaviour(refault_after_reboot=True)})
    fleet.run(14)
    assert fleet.state("n1") == "needs-human"
    assert fleet.reboots == {"n1": 1}  # reimage is passed over: no cloud
    assert "the fault came back" in fleet.views["n1"].annotations[STAGE_ANNOTATION]


def test_validation_needs_a_validator_ready_since_the_repair() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(validator=False)})
    fleet.run(8)
    assert fleet.state("n1") == "validating" and fleet.views["n1"].unschedulable
    assert "a validator pod Ready since the repair" in fleet.plans[-1].nodes["n1"].step.next_step
    assert fleet.plans[-1].nodes["n1"].restart_validator is not None


def test_a_person_hands_a_needs_human_node_back_by_removing_the_label() -> None:
    view = node("n1", fault("hardware-failure", 990.0))
    fleet = Fleet(ENFORCE, {"n1": view})
    fleet.run(6)
    assert fleet.state("n1") == "needs-human"
    labels = {k: v for k, v in fleet.views["n1"].labels.items() if k != STATE_LABEL}
    fleet.views["n1"] = replace(fleet.views["n1"], labels=labels, conditions=())
    fleet.run(4)
    assert fleet.state("n1") == "" and not fleet.views["n1"].unschedulable
    assert set(fleet.views["n1"].annotations) == {HISTORY_ANNOTATION}


def test_a_node_uncordoned_by_someone_else_mid_remediation_is_not_cordoned_again() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(drain_rounds=50)})
    fleet.run(2)
    fleet.views["n1"] = replace(fleet.views["n1"], unschedulable=False)
    result = fleet.round()
    assert result.nodes["n1"].patch.annotations[CORDONED_ANNOTATION] is None
    assert any(e.reason == "GPURemediationUncordoned" for e in result.events)
    fleet.run(3)
    assert not fleet.views["n1"].unschedulable


def test_a_taint_rung_adds_the_configured_taint_and_recovery_removes_only_it() -> None:
    policy = replace(ENFORCE, rules={"fallen-off-bus": Rule(("cordon", "taint", "drain", "reboot"))})
    other = Taint("team", "NoSchedule", "a")
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0), taints=(other,))})
    fleet.round()
    assert fleet.views["n1"].taints == (other, Taint("nvidia.com/gpu-fault", "NoSchedule", "fallen-off-bus"))
    fleet.run(10)
    assert fleet.views["n1"].taints == (other,) and fleet.state("n1") == ""


def test_a_reimage_without_the_cloud_is_passed_over() -> None:
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))}, {"n1": Behaviour(reboot=False)})
    fleet.run(6)
    fleet.views["n1"] = replace(fleet.views["n1"], ready=False)
    fleet.now += ENFORCE.timeouts.reboot_seconds
    fleet.run(2)
    assert fleet.state("n1") == "needs-human"
    assert "reboot failed (the node did not boot again within 1800 s); the fallen-off-bus ladder hands it to a " \
        "person" in fleet.views["n1"].annotations[STAGE_ANNOTATION]


@pytest.mark.parametrize(("key", "value"), [
    (STAGE_ANNOTATION, "{not json"), (STAGE_ANNOTATION, '{"action": "explode", "started": 1}'),
    (FAULT_ANNOTATION, "[1, 2]"), (HISTORY_ANNOTATION, '{"a": 1}'), (RESET_REQUEST_ANNOTATION, "::"),
    (REBOOT_REQUEST_ANNOTATION, "x" * 300), (HISTORY_ANNOTATION, '[{"action": "reboot", "at": "yesterday"}]')])
@pytest.mark.parametrize("state", ["", "quarantined", "draining", "rebooting", "validating", "bogus"])
def test_garbage_annotations_are_reported_never_a_crash(key: str, value: str, state: str) -> None:
    view = node("n1", fault("fallen-off-bus", 990.0), unschedulable=bool(state))
    view = replace(view, labels={**view.labels, STATE_LABEL: state},
                   annotations={CORDONED_ANNOTATION: "true", key: value})
    result = plan({"n1": view}, ENFORCE, 1000.0)
    node_plan = result.nodes["n1"]
    assert node_plan.cloud is None and node_plan.local is None  # nothing asked blind
    if key in (STAGE_ANNOTATION, FAULT_ANNOTATION, HISTORY_ANNOTATION) or state == "bogus":
        assert result.problems and all(p.startswith("n1: ") for p in result.problems)
    if state == "rebooting" and key == STAGE_ANNOTATION:
        assert node_plan.after is State.NEEDS_HUMAN


def test_a_condition_without_its_transition_time_is_reported() -> None:
    condition = NodeCondition("GPUFallenOffBus", "True", "XID79", "", None)
    result = plan({"n1": node("n1", condition)}, ENFORCE, 1000.0)
    assert any("no lastTransitionTime" in p for p in result.problems)
    assert result.nodes["n1"].after is State.QUARANTINED and result.metrics.cordon_latency_seconds == ()


def test_the_most_drastic_fault_is_remediated_first() -> None:
    view = node("n1", fault("reset-required", 980.0), fault("fallen-off-bus", 990.0), fault("thermal", 970.0))
    result = plan({"n1": view}, ENFORCE, 1000.0)
    record = json.loads(result.nodes["n1"].patch.annotations[FAULT_ANNOTATION])
    assert record["class"] == "fallen-off-bus" and record["gpus"] == [{"uuid": GPU, "pci": "0000:17:00.0"}]


def test_attempts_without_a_limit_never_need_a_person_for_their_count() -> None:
    policy = replace(ENFORCE, attempts=Attempts(max=None))
    fleet = Fleet(policy, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    for _ in range(5):
        fleet.run(10)
        fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", fleet.now),))
    assert fleet.reboots == {"n1": 5}


def test_applying_a_plan_and_planning_again_at_once_repeats_nothing() -> None:
    view = node("n1", fault("fallen-off-bus", 990.0))
    first = plan({"n1": view}, ENFORCE, 1000.0)
    assert plan({"n1": view}, ENFORCE, 1000.0) == first  # pure
    after = apply_patch(view, first.nodes["n1"].patch)
    again = plan({"n1": after}, ENFORCE, 1000.0)
    assert again.nodes["n1"].before is State.QUARANTINED and again.nodes["n1"].after is State.DRAINING


def test_a_fault_that_comes_back_in_the_recoverys_own_second_holds() -> None:
    """Found by the e2e (the third-fault scenario): the API keeps condition times in whole seconds, so an XID
    written right after the reboot reads as the recovery's own second, before its fraction; it is a new fault, not
    a stale one. One from a second before the recovery stays stale."""
    fleet = Fleet(ENFORCE, {"n1": node("n1", fault("fallen-off-bus", 990.0))})
    fleet.run(10)
    assert fleet.state("n1") == "" and fleet.reboots == {"n1": 1}
    history = json.loads(fleet.views["n1"].annotations[HISTORY_ANNOTATION])
    recovery = max((e for e in history if e["action"] == "validate"), key=lambda e: e["at"])
    recovery["at"] += 0.29  # the controller's clock has fractions; the API's condition times do not
    annotations = {**fleet.views["n1"].annotations, HISTORY_ANNOTATION: json.dumps(history)}
    fleet.views["n1"] = replace(fleet.views["n1"], annotations=annotations)
    same_second = float(math.floor(recovery["at"]))
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", same_second - 1),))
    assert fleet.round().nodes["n1"].patch is None  # a second earlier: stale
    fleet.views["n1"] = replace(fleet.views["n1"], conditions=(fault("fallen-off-bus", same_second),))
    assert fleet.round().nodes["n1"].after is State.QUARANTINED
