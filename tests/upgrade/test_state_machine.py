"""The upgrade planner, state by state (reference/gpu-operator.md §9.1)."""

from __future__ import annotations

import pytest

from gpu_operator.upgrade import Action, NodeObservation, State, UpgradePolicy, plan
from gpu_operator.upgrade.state_machine import ActionKind

A = ActionKind
POLICY = UpgradePolicy(max_parallel_upgrades=2, max_unavailable="50%", wait_for_jobs=True, drain=True)


def _kinds(actions: list[Action]) -> list[tuple[str, str]]:
    return [(a.kind.value, a.value.split("=")[0] if a.kind is A.ANNOTATE else a.value) for a in actions]


@pytest.mark.parametrize(("node", "expected"), [
    (NodeObservation("n", driver_pod_outdated=True), [("set-state", "upgrade-required")]),
    (NodeObservation("n", State.DONE, driver_pod_outdated=True), [("set-state", "upgrade-required")]),
    (NodeObservation("n"), [("set-state", "upgrade-done")]),
    (NodeObservation("n", State.DONE), []),
    (NodeObservation("n", State.FAILED, driver_pod_outdated=True, unschedulable=True), []),  # never by itself
    (NodeObservation("n", State.CORDON), [("cordon", ""), ("set-state", "wait-for-jobs-required")]),
    (NodeObservation("n", State.CORDON, unschedulable=True), [("set-state", "wait-for-jobs-required")]),
    (NodeObservation("n", State.CORDON, config_digest_changed=False), [("cordon", ""),
                                                                       ("set-state", "pod-restart-required")]),
    (NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=1),
     [("annotate", "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time")]),
    (NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=1, wait_started_at=0), []),  # timeout 0: forever
    (NodeObservation("n", State.WAIT_FOR_JOBS), [("set-state", "pod-deletion-required")]),
    (NodeObservation("n", State.POD_DELETION, gpu_pods=2), [("delete-gpu-pods", "")]),
    (NodeObservation("n", State.POD_DELETION, gpu_pods=2, eviction_blocked=True),
     [("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "upgrade-failed")]),
    (NodeObservation("n", State.POD_DELETION), [("set-state", "drain-required")]),
    (NodeObservation("n", State.DRAIN, gpu_pods=1), [("drain", "")]),
    (NodeObservation("n", State.DRAIN), [("set-state", "pod-restart-required")]),
    (NodeObservation("n", State.POD_RESTART, driver_pod_outdated=True), [("delete-driver-pod", "")]),
    (NodeObservation("n", State.POD_RESTART, driver_pod_present=False), []),
    (NodeObservation("n", State.POD_RESTART), [("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time"),
                                               ("set-state", "validation-required")]),
    (NodeObservation("n", State.VALIDATION, validation_started_at=200), []),  # 500 of 600 s
    (NodeObservation("n", State.VALIDATION, validation_started_at=0),
     [("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "upgrade-failed")]),
    (NodeObservation("n", State.VALIDATION),  # its start time lost in a crash: the clock starts now
     [("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time")]),
    (NodeObservation("n", State.VALIDATION, validator_ready=True), [("set-state", "uncordon-required")]),
    (NodeObservation("n", State.UNCORDON, unschedulable=True, initial_unschedulable=False),
     [("uncordon", ""), ("set-state", "upgrade-done")]),
    (NodeObservation("n", State.UNCORDON, unschedulable=True, initial_unschedulable=True),  # cordoned by someone
     [("set-state", "upgrade-done")]),
    (NodeObservation("n", State.DONE, initial_unschedulable=False, validation_started_at=5),
     [("annotate", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"),
      ("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time")]),
    (NodeObservation("n", State.CORDON, skip=True), []),
])
def test_one_step(node: NodeObservation, expected: list[tuple[str, str]]) -> None:
    assert _kinds(plan([node], POLICY, now=700)) == expected


def test_no_drain_goes_from_pod_deletion_to_restart() -> None:
    policy = UpgradePolicy(drain=False)
    assert _kinds(plan([NodeObservation("n", State.POD_DELETION)], policy, 0)) == [
        ("set-state", "pod-restart-required")]


def test_without_auto_upgrade_nothing_happens() -> None:
    assert plan([NodeObservation("n", driver_pod_outdated=True)], UpgradePolicy(auto_upgrade=False), 0) == []


@pytest.mark.parametrize(("policy", "admitted"), [
    (UpgradePolicy(max_parallel_upgrades=2, max_unavailable=10), ["a", "b"]),
    (UpgradePolicy(max_parallel_upgrades=0, max_unavailable=3), ["a", "b", "c"]),
    (UpgradePolicy(max_parallel_upgrades=0, max_unavailable="25%"), ["a", "b"]),  # 25% of 5, rounded up
    (UpgradePolicy(max_parallel_upgrades=5, max_unavailable="10%"), ["a"]),
])
def test_admission_keeps_both_limits(policy: UpgradePolicy, admitted: list[str]) -> None:
    nodes = [NodeObservation(name, State.REQUIRED, driver_pod_outdated=True) for name in "abcde"]
    actions = plan(nodes, policy, 0)
    assert [a.node for a in actions if a.kind is A.SET_STATE and a.value == "cordon-required"] == admitted


def test_an_already_cordoned_node_does_not_use_the_unavailable_budget_twice() -> None:
    nodes = [NodeObservation("a", State.REQUIRED, unschedulable=True, driver_pod_outdated=True),
             NodeObservation("b", State.REQUIRED, driver_pod_outdated=True)]
    actions = plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=2), 0)
    assert [a.node for a in actions if a.value == "cordon-required"] == ["a", "b"]
    recorded = [a.value for a in actions if a.kind is A.ANNOTATE]
    assert recorded == ["nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable=true",
                        "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable=false"]
