"""The upgrade planner, state by state (reference/gpu-operator.md §9.1)."""

from __future__ import annotations

import pytest

from gpu_operator.upgrade import Action, NodeObservation, State, UpgradePolicy, plan
from gpu_operator.upgrade.observation import ActionKind

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
    (NodeObservation("n", State.CORDON, config_digest_changed=False), [("cordon", ""),  # restart-only is decided
                                                                       ("set-state", "wait-for-jobs-required")]),
    (NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=1), []),  # timeout 0: forever, no start time
    (NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=1, wait_started_at=0), []),
    (NodeObservation("n", State.WAIT_FOR_JOBS), [("set-state", "pod-deletion-required")]),
    (NodeObservation("n", State.POD_DELETION, gpu_pods=2), [("delete-gpu-pods", "")]),
    (NodeObservation("n", State.POD_DELETION, gpu_pods=2, eviction_blocked=True),  # drain enabled: the fallback
     [("set-state", "drain-required")]),
    (NodeObservation("n", State.POD_DELETION), [("set-state", "pod-restart-required")]),
    (NodeObservation("n", State.DRAIN, gpu_pods=1), [("drain", "")]),
    (NodeObservation("n", State.DRAIN), [("set-state", "pod-restart-required")]),
    (NodeObservation("n", State.POD_RESTART, driver_pod_outdated=True), [("delete-driver-pod", "")]),
    (NodeObservation("n", State.POD_RESTART, driver_pod_outdated=True, driver_pod_terminating=True), []),
    (NodeObservation("n", State.POD_RESTART), [("set-state", "validation-required")]),
    (NodeObservation("n", State.VALIDATION, validation_started_at=200), []),  # 500 of 600 s
    (NodeObservation("n", State.VALIDATION, validation_started_at=0),
     [("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time"),
      ("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "upgrade-failed")]),
    (NodeObservation("n", State.VALIDATION),  # a validator not Ready: the clock starts
     [("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time")]),
    (NodeObservation("n", State.VALIDATION, validator_ready=True), [("set-state", "uncordon-required")]),
    (NodeObservation("n", State.UNCORDON, unschedulable=True, initial_unschedulable=False),
     [("uncordon", ""), ("set-state", "upgrade-done")]),
    (NodeObservation("n", State.UNCORDON, unschedulable=True, initial_unschedulable=True),  # cordoned by someone
     [("set-state", "upgrade-done")]),
    (NodeObservation("n", State.DRAIN, gpu_pods=1, eviction_blocked=True),
     [("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "upgrade-failed")]),
    (NodeObservation("n", State.POD_RESTART, driver_pod_ready=False), []),  # the new driver is installing
    (NodeObservation("n", State.POD_RESTART, driver_pod_ready=False, driver_pod_failing=True),
     [("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "upgrade-failed")]),
    (NodeObservation("n", State.VALIDATION, validator_ready=True, driver_pod_ready=False, validation_started_at=690),
     []),
    (NodeObservation("n", State.DONE, initial_unschedulable=False, validation_started_at=5),
     [("annotate", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"),
      ("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time")]),
    (NodeObservation("n", State.CORDON, skip=True),  # skip is read at upgrade-required only
     [("cordon", ""), ("set-state", "wait-for-jobs-required")]),
    (NodeObservation("n", State.REQUIRED, skip=True, driver_pod_outdated=True), []),
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


def test_a_node_cordoned_by_someone_else_waits_until_uncordoned() -> None:
    """NVIDIA/gpu-operator#2820: upgrade_inplace.go ProcessUpgradeRequiredNodes admits an unschedulable node past
    every limit and leaves it cordoned after. Ours leaves it at upgrade-required (its cordon recorded, as NVIDIA
    records it) and admits it, within the limits, once it is uncordoned: the record of the old cordon goes then."""
    nodes = [NodeObservation("a", State.DONE, unschedulable=True, driver_pod_outdated=True),
             NodeObservation("b", State.REQUIRED, driver_pod_outdated=True)]
    actions = plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=2), 0)
    assert [(a.node, a.value) for a in actions if a.kind is A.SET_STATE] == [("a", "upgrade-required"),
                                                                           ("b", "cordon-required")]
    recorded = [(a.node, a.value) for a in actions if a.kind is A.ANNOTATE]
    assert recorded == [("a", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable=true")]
    waiting = NodeObservation("a", State.REQUIRED, unschedulable=True, driver_pod_outdated=True,
                              initial_unschedulable=True)
    assert plan([waiting], UpgradePolicy(max_parallel_upgrades=0, max_unavailable="100%"), 0) == []
    uncordoned = NodeObservation("a", State.REQUIRED, driver_pod_outdated=True, initial_unschedulable=True)
    assert _kinds(plan([uncordoned], UpgradePolicy(max_parallel_upgrades=0, max_unavailable="100%"), 0)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"),
        ("set-state", "cordon-required")]


# --- issue 20, items 11-15: each test names the upstream function it follows (k8s-operator-libs pkg/upgrade as
# vendored in gpu-operator v26.7.0, vendor/github.com/NVIDIA/k8s-operator-libs/pkg/upgrade/).

def _admitted(actions: list[Action]) -> list[str]:
    return [a.node for a in actions if a.kind is A.SET_STATE and a.value == "cordon-required"]


def test_a_failed_node_holds_an_upgrade_slot() -> None:
    """Item 11. common_manager.go GetUpgradesInProgress counts every managed node outside unknown, done and
    upgrade-required, so `upgrade-failed` holds a slot; GetUpgradesAvailable then leaves none at
    maxParallelUpgrades 1 and InplaceNodeStateManagerImpl.ProcessUpgradeRequiredNodes admits no node."""
    nodes = [NodeObservation("a", State.FAILED, unschedulable=True, driver_pod_ready=False,
                             failure_reason="the new driver pod restarted more than 10 times without becoming Ready"),
             NodeObservation("b", State.REQUIRED, driver_pod_outdated=True)]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"), 0)) == []
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=2, max_unavailable="100%"), 0)) == ["b"]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable="100%"), 0)) == ["b"]


def test_a_not_ready_node_is_not_admitted_past_an_exhausted_budget() -> None:
    """Item 15. InplaceNodeStateManagerImpl.ProcessUpgradeRequiredNodes: a NotReady node that is still schedulable
    waits with no upgrade available (it would be cordoned by the upgrade, past maxUnavailable);
    GetCurrentUnavailableNodes counts NotReady nodes as unavailable. NVIDIA's lets the unschedulable one go on; ours
    does not take a node cordoned by someone else (NVIDIA/gpu-operator#2820)."""
    nodes = [NodeObservation(name, State.REQUIRED, driver_pod_outdated=True, ready=False, unschedulable=cordoned)
             for name, cordoned in (("a", False), ("b", True), ("c", False))]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=1), 0)) == []
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=4), 0)) == ["a"]


def test_validation_waits_for_the_new_driver_pod_running_and_ready() -> None:
    """Item 12. common_manager.go ProcessPodRestartNodes moves a node to validation-required only when
    isDriverPodInSync (revision in sync, phase Running, every container status Ready); a stale Ready validator
    must not let a node be uncordoned while its new driver is still installing."""
    installing = NodeObservation("n", State.POD_RESTART, driver_pod_ready=False, validator_ready=True)
    assert plan([installing], POLICY, 700) == []
    ready = NodeObservation("n", State.POD_RESTART, driver_pod_ready=True, validator_ready=True)
    assert _kinds(plan([ready], POLICY, 700))[-1] == ("set-state", "validation-required")


def test_a_crash_looping_new_driver_pod_fails_the_node() -> None:
    """Item 12. common_manager.go isDriverPodFailing: a not-Ready (init) container with more than 10 restarts
    sends the node to upgrade-failed from ProcessPodRestartNodes."""
    node = NodeObservation("n", State.POD_RESTART, driver_pod_ready=False, driver_pod_failing=True)
    actions = plan([node], POLICY, 700)
    assert _kinds(actions)[-1] == ("set-state", "upgrade-failed")
    assert "restarted more than 10 times" in actions[0].value


@pytest.mark.parametrize("drain", [True, False])
def test_a_successful_gpu_pod_deletion_goes_to_pod_restart_never_to_drain(drain: bool) -> None:
    """Item 13. pod_manager.go SchedulePodEviction: once the GPU pods are deleted the node goes to
    pod-restart-required; drain-required only comes from updateNodeToDrainOrFailed, after a failed deletion."""
    policy = UpgradePolicy(drain=drain)
    assert _kinds(plan([NodeObservation("n", State.POD_DELETION)], policy, 0)) == [
        ("set-state", "pod-restart-required")]


def test_a_failed_gpu_pod_deletion_drains_with_drain_enabled_else_fails() -> None:
    """Items 13 and 15 (deletion failure falls back to drain). pod_manager.go updateNodeToDrainOrFailed:
    drain-required when `drain.enable`, else upgrade-failed."""
    node = NodeObservation("n", State.POD_DELETION, gpu_pods=1, eviction_blocked=True, block_reason="ml/x has emptyDir")
    assert _kinds(plan([node], UpgradePolicy(drain=True), 0)) == [("set-state", "drain-required")]
    failed = plan([node], UpgradePolicy(drain=False), 0)
    assert _kinds(failed) == [("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"),
                              ("set-state", "upgrade-failed")]
    assert failed[0].value.endswith("ml/x has emptyDir")


def test_notready_nodes_count_against_max_unavailable() -> None:
    """Item 15. common_manager.go GetCurrentUnavailableNodes counts cordoned and NotReady nodes."""
    nodes = [NodeObservation("a", State.DONE, ready=False),
             *[NodeObservation(name, State.REQUIRED, driver_pod_outdated=True) for name in "bcd"]]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=2), 0)) == ["b"]


def test_a_failed_node_retried_is_taken_back_in_under_the_upgrades_own_cordon() -> None:
    """A failed node keeps the upgrade's cordon; `kubectl label node ... upgrade-required --overwrite` (what the
    rollout wait and diag tell people to run) must take it back in, although it is unschedulable: its failure
    reason says the cordon is the upgrade's. It adds no unavailability (its cordon is counted already), and the
    old reason goes at admission."""
    retried = NodeObservation("a", State.REQUIRED, unschedulable=True, driver_pod_outdated=True,
                              failure_reason="the validator was not Ready within 600 s")
    busy = NodeObservation("b", State.CORDON, unschedulable=True)
    actions = plan([retried, busy], UpgradePolicy(max_parallel_upgrades=0, max_unavailable=1), 0)
    assert _kinds([a for a in actions if a.node == "a"]) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "cordon-required")]


def test_a_cordoned_node_is_admitted_past_no_limit() -> None:
    """Item 15 (justified in docs/tasks/driver-upgrades.md). upgrade_inplace.go ProcessUpgradeRequiredNodes admits an
    unschedulable node even with no upgrade slot left; ours admits none cordoned by someone else, whatever the
    limits (NVIDIA/gpu-operator#2820), and counts it as unavailable."""
    nodes = [NodeObservation("a", State.REQUIRED, driver_pod_outdated=True),
             NodeObservation("b", State.REQUIRED, unschedulable=True, driver_pod_outdated=True),
             NodeObservation("c", State.DONE, unschedulable=True)]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=3), 0)) == ["a"]
    assert _admitted(plan(nodes, UpgradePolicy(max_parallel_upgrades=0, max_unavailable=2), 0)) == []
    failed = NodeObservation("f", State.FAILED, unschedulable=True, driver_pod_ready=False)
    assert _admitted(plan([*nodes, failed], UpgradePolicy(max_parallel_upgrades=1, max_unavailable=4), 0)) == []


def test_the_skip_label_is_read_at_upgrade_required_only() -> None:
    """Item 15. upgrade_inplace.go ProcessUpgradeRequiredNodes is the only reader of SkipNodeUpgrade: a node
    labelled mid-upgrade finishes (and is uncordoned) instead of staying cordoned for good; an outdated node
    still becomes upgrade-required (ProcessDoneOrUnknownNodes) but is not admitted."""
    policy = UpgradePolicy(max_parallel_upgrades=0, max_unavailable="100%")
    mid = NodeObservation("n", State.UNCORDON, unschedulable=True, skip=True)
    assert _kinds(plan([mid], policy, 0)) == [("uncordon", ""), ("set-state", "upgrade-done")]
    outdated = NodeObservation("n", State.DONE, skip=True, driver_pod_outdated=True)
    assert _kinds(plan([outdated], policy, 0)) == [("set-state", "upgrade-required")]


def test_the_initial_state_annotation_is_written_as_nvidia_writes_it() -> None:
    """Item 15. common_manager.go ProcessDoneOrUnknownNodes writes `...node-initial-state.unschedulable=true` on a
    node unschedulable when it needs an upgrade, and nothing on a schedulable one; updateNodeToUncordonOrDoneState
    reads its presence. So NVIDIA's operator, taking over, keeps such a node cordoned and uncordons the others."""
    cordoned = plan([NodeObservation("n", State.DONE, unschedulable=True, driver_pod_outdated=True)], POLICY, 0)
    assert [a.value for a in cordoned] == ["nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable=true",
                                           "upgrade-required"]
    free = plan([NodeObservation("n", State.DONE, driver_pod_outdated=True)], POLICY, 0)
    assert [a.value for a in free] == ["upgrade-required"]
    admitted = plan([NodeObservation("n", State.REQUIRED, driver_pod_outdated=True)], POLICY, 0)
    assert not [a for a in admitted if a.kind is A.ANNOTATE]


def test_a_failed_node_returns_through_validation_once_its_driver_pod_is_ready() -> None:
    """Item 15. common_manager.go ProcessUpgradeFailedNodes returns a failed node whose driver pod is in sync and
    Ready to uncordon-required; we send it to validation-required first (no uncordon before a passed validation),
    and keep a node whose validation timed out failed (NVIDIA's path would uncordon it at once, undoing the
    timeout)."""
    crashed = NodeObservation("n", State.FAILED, unschedulable=True,
                              failure_reason="the new driver pod restarted more than 10 times without becoming Ready")
    assert _kinds(plan([crashed], POLICY, 700)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "validation-required")]
    assert plan([NodeObservation("n", State.FAILED, unschedulable=True, driver_pod_ready=False)], POLICY, 700) == []
    timed_out = NodeObservation("n", State.FAILED, unschedulable=True,
                                failure_reason="the validator was not Ready within 600 s")
    assert plan([timed_out], POLICY, 700) == []


# --- issue 27, items 2, 3, 5, 6 and 7 (k8s-operator-libs pkg/upgrade as vendored in gpu-operator v26.7.0)

def test_a_node_without_a_driver_pod_is_not_managed_and_leaves_the_upgrade() -> None:
    """Item 2. upgrade_state.go BuildState builds the node states from driver pods only: a node without one is
    neither admitted nor counted (GetTotalManagedNodes, GetUpgradesInProgress). We also release what the upgrade
    held on it: the cordon it put there (never one from before: the initial-state annotation), the state label
    and the bookkeeping annotations - NVIDIA would leave it cordoned in its state for good."""
    gone = dict(driver_pod_present=False)
    waiting = NodeObservation("a", State.REQUIRED, driver_pod_outdated=True, **gone)  # type: ignore[arg-type]
    assert _kinds(plan([waiting], POLICY, 0)) == [("set-state", "")]
    stuck = NodeObservation("a", State.POD_RESTART, unschedulable=True, validation_started_at=5,
                            **gone)  # type: ignore[arg-type]
    assert _kinds(plan([stuck], POLICY, 0)) == [
        ("uncordon", ""), ("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time"), ("set-state", "")]
    theirs = NodeObservation("a", State.FAILED, unschedulable=True, initial_unschedulable=True,
                             failure_reason="x", **gone)  # type: ignore[arg-type]
    assert _kinds(plan([theirs], POLICY, 0)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"),
        ("annotate", "nvidia.com/gpu-driver-upgrade-failure-reason"), ("set-state", "")]
    # at cordon-required the upgrade has not cordoned yet: a cordon found there is someone else's
    admitted = NodeObservation("a", State.CORDON, unschedulable=True, **gone)  # type: ignore[arg-type]
    assert _kinds(plan([admitted], POLICY, 0)) == [("set-state", "")]
    assert plan([NodeObservation("a", State.DONE, **gone)], POLICY, 0) == []  # type: ignore[arg-type]


def test_a_node_without_a_driver_pod_holds_no_slot_and_no_share_of_max_unavailable() -> None:
    """Item 2. upgrade_inplace.go ProcessUpgradeRequiredNodes counts GetUpgradesInProgress and
    GetTotalManagedNodes over BuildState's nodes: one that lost its driver pod mid-upgrade no longer holds the
    maxParallelUpgrades slot, nor counts in maxUnavailable's percentage."""
    left = NodeObservation("a", State.POD_RESTART, unschedulable=True, driver_pod_present=False)
    waiting = NodeObservation("b", State.REQUIRED, driver_pod_outdated=True)
    assert _admitted(plan([left, waiting], UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"), 0)) == ["b"]
    fleet = [NodeObservation(n, State.REQUIRED, driver_pod_outdated=True) for n in "bcd"]
    unmanaged = [NodeObservation(n, State.DONE, driver_pod_present=False) for n in "wxyz"]
    assert _admitted(plan([*fleet, *unmanaged], UpgradePolicy(max_parallel_upgrades=0, max_unavailable="34%"),
                          0)) == ["b", "c"]  # 34% of 3, not of 7


@pytest.mark.parametrize(("facts", "restart_only"), [
    ({}, True),
    ({"unschedulable": True}, True),
    ({"upgrade_requested": True}, False),
    ({"safe_load_waiting": True}, False),
    ({"driver_pod_orphaned": True}, False),
])
def test_restart_only_goes_from_upgrade_required_to_pod_restart(facts: dict[str, bool], restart_only: bool) -> None:
    """Item 6. upgrade_inplace.go nextStateForUpgradeRequiredNode: with the config digest unchanged the node is
    cordoned and set pod-restart-required at admission; shouldRestartOnly refuses it for a node whose upgrade was
    requested, whose driver waits for a safe load, or whose pod has no owner (those take the full flow)."""
    node = NodeObservation("n", State.REQUIRED, driver_pod_outdated=True, config_digest_changed=False,
                           **facts)  # type: ignore[arg-type]
    kinds = [(k, v) for k, v in _kinds(plan([node], POLICY, 0))
             if (k, v) != ("annotate", "nvidia.com/gpu-driver-upgrade-requested")]
    if not restart_only:
        assert kinds == [("set-state", "cordon-required")]
    elif facts.get("unschedulable"):  # cordoned by someone else: it waits (NVIDIA/gpu-operator#2820)
        assert kinds == []
    else:
        assert kinds == [("cordon", ""), ("set-state", "pod-restart-required")]


def test_restart_only_admissions_take_an_upgrade_slot() -> None:
    """Item 6. ProcessUpgradeRequiredNodes decrements upgradesAvailable for a restart-only node as for any."""
    nodes = [NodeObservation(n, State.REQUIRED, driver_pod_outdated=True, config_digest_changed=False) for n in "ab"]
    actions = plan(nodes, UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"), 0)
    assert [(a.node, a.value) for a in actions if a.kind is A.SET_STATE] == [("a", "pod-restart-required")]


def test_the_upgrade_requested_annotation_asks_for_an_upgrade_and_is_consumed_at_upgrade_required() -> None:
    """Item 7. common_manager.go ProcessDoneOrUnknownNodes sends an in-sync node with
    `nvidia.com/gpu-driver-upgrade-requested=true` to upgrade-required; upgrade_inplace.go
    ProcessUpgradeRequiredNodes removes the annotation from every upgrade-required node, admitted, skipped or
    held back by the limits."""
    assert _kinds(plan([NodeObservation("n", State.DONE, upgrade_requested=True)], POLICY, 0)) == [
        ("set-state", "upgrade-required")]
    full = NodeObservation("busy", State.CORDON)
    skipped = NodeObservation("s", State.REQUIRED, upgrade_requested=True, skip=True)
    held = NodeObservation("t", State.REQUIRED, upgrade_requested=True)
    actions = plan([full, skipped, held], UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"), 0)
    removed = [a.node for a in actions if a.kind is A.ANNOTATE and a.value == "nvidia.com/gpu-driver-upgrade-requested="]
    assert removed == ["s", "t"] and _admitted(actions) == []


def test_an_ownerless_driver_pod_is_restarted_in_the_upgrade_and_never_counts_as_current() -> None:
    """Item 7. common_manager.go podInSyncWithDS reports an orphaned pod never in sync: ProcessPodRestartNodes
    deletes it (SchedulePodsRestart), isDriverPodInSync keeps a failed node failed, and ProcessDoneOrUnknownNodes
    does not send it to upgrade-required by itself."""
    orphan = {"driver_pod_orphaned": True}
    assert _kinds(plan([NodeObservation("n", State.POD_RESTART, **orphan)], POLICY, 0)) == [  # type: ignore[arg-type]
        ("delete-driver-pod", "")]
    assert plan([NodeObservation("n", State.FAILED, unschedulable=True, **orphan)], POLICY, 0) == []  # type: ignore[arg-type]
    assert plan([NodeObservation("n", State.DONE, **orphan)], POLICY, 0) == []  # type: ignore[arg-type]


def test_a_driver_waiting_for_a_safe_load_takes_the_full_upgrade_and_is_unblocked_after_it() -> None:
    """Item 7. safe_driver_load_manager.go: IsWaitingForSafeDriverLoad (the annotation is non-empty) sends an
    in-sync node to upgrade-required (ProcessDoneOrUnknownNodes); the workloads go first (no restart-only); at
    pod-restart-required and validation-required UnblockLoading removes the annotation instead of restarting."""
    waiting = {"safe_load_waiting": True}
    assert _kinds(plan([NodeObservation("n", State.DONE, **waiting)], POLICY, 0)) == [  # type: ignore[arg-type]
        ("set-state", "upgrade-required")]
    assert _kinds(plan([NodeObservation("n", State.POD_RESTART, driver_pod_ready=False, **waiting)], POLICY,
                       0)) == [("annotate", "nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load")]
    validating = NodeObservation("n", State.VALIDATION, validator_ready=True, **waiting)  # type: ignore[arg-type]
    assert _kinds(plan([validating], POLICY, 0)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load"), ("set-state", "uncordon-required")]


def test_without_a_validator_pod_validation_waits_without_a_clock() -> None:
    """Item 5. validation_manager.go Validate: no validation pod on the node returns "not done" before
    handleTimeout is reached, so no start time is written and no timeout fails the node, however long it waits."""
    node = NodeObservation("n", State.VALIDATION, validator_present=False, validator_ready=False)
    assert plan([node], POLICY, 1e9) == []
    late = NodeObservation("n", State.VALIDATION, validator_present=False, validation_started_at=0)
    assert plan([late], POLICY, 1e9) == []


def test_a_node_cordoned_before_the_upgrade_goes_from_validation_to_done_in_one_step() -> None:
    """Item 5. common_manager.go updateNodeToUncordonOrDoneState: with the initial-state annotation present the
    validated node skips uncordon-required, goes to upgrade-done and loses the annotation in the same step."""
    node = NodeObservation("n", State.VALIDATION, unschedulable=True, initial_unschedulable=True,
                           validator_ready=True, validation_started_at=690)
    assert _kinds(plan([node], POLICY, 700)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade-validation-start-time"),
        ("annotate", "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"),
        ("set-state", "upgrade-done")]


def test_start_time_annotations_only_under_a_timeout_and_gone_on_leaving() -> None:
    """Item 5. pod_manager.go ScheduleCheckOnPodCompletion calls HandleTimeoutOnPodCompletions only when
    `waitForCompletion.timeoutSeconds` is set and removes the start time once the jobs are done; validation's
    start time is written by handleTimeout (so only with a timeout) and removed when the node passes or fails."""
    no_timeout = UpgradePolicy(wait_for_jobs=True, wait_timeout_seconds=0, validation_timeout_seconds=0)
    assert plan([NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=2)], no_timeout, 0) == []
    assert plan([NodeObservation("n", State.VALIDATION)], no_timeout, 0) == []
    done = NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=0, wait_started_at=5)
    assert _kinds(plan([done], no_timeout, 0)) == [
        ("annotate", "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"),
        ("set-state", "pod-deletion-required")]
    # entering validation writes nothing: the clock starts at the first look at a validator that is not Ready
    assert _kinds(plan([NodeObservation("n", State.POD_RESTART)], POLICY, 0)) == [("set-state", "validation-required")]


def test_the_timeouts_pass_only_after_their_seconds() -> None:
    """Item 5. validation_manager.go handleTimeout and pod_manager.go HandleTimeoutOnPodCompletions move on when
    `currentTime > startTime + timeoutSeconds`: at the deadline itself the node still waits."""
    policy = UpgradePolicy(wait_for_jobs=True, wait_timeout_seconds=120, validation_timeout_seconds=600)
    validating = NodeObservation("n", State.VALIDATION, validation_started_at=1000)
    assert plan([validating], policy, 1600) == []
    assert _kinds(plan([validating], policy, 1601))[-1] == ("set-state", "upgrade-failed")
    waiting = NodeObservation("n", State.WAIT_FOR_JOBS, jobs_running=1, wait_started_at=1000)
    assert plan([waiting], policy, 1120) == []
    assert _kinds(plan([waiting], policy, 1121))[-1] == ("set-state", "pod-deletion-required")


def test_a_ready_driver_that_waited_for_its_safe_load_is_unblocked_on_its_way_to_validation() -> None:
    """Item 7. common_manager.go ProcessPodRestartNodes calls UnblockLoading for every in-sync pod before
    isDriverPodInSync, so the annotation goes in the same step as the move to validation-required."""
    node = NodeObservation("n", State.POD_RESTART, safe_load_waiting=True)
    assert _kinds(plan([node], POLICY, 0)) == [("annotate", "nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load"),
                                               ("set-state", "validation-required")]
