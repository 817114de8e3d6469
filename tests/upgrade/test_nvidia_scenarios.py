"""k8s-operator-libs' own unit-test scenarios for the upgrade package, run through our planner.

Each row is one `It(...)` of NVIDIA/k8s-operator-libs `pkg/upgrade/*_test.go` (read at 11e747a, the newest
snapshot available; gpu-operator v26.7.0 vendors d720f25, whose non-test sources were read for the rules):
the same nodes in the same states, the same policy, and the states and annotations NVIDIA's test expects after
one ApplyState (or manager call). Where gpu-operator configures the package differently from the test (it always
enables pod deletion and validation, `app=nvidia-operator-validator`), the row follows gpu-operator; where we
differ on purpose (docs/tasks/driver-upgrades.md, "Where the upgrade follows NVIDIA's"), the row says so and
asserts our result. Tests of the maintenance-operator (requestor) mode are left out: we have no such mode.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpu_operator.upgrade import NodeObservation, State, UpgradePolicy, plan
from gpu_operator.upgrade.observation import (
    INITIAL_STATE_ANNOTATION,
    SAFE_LOAD_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    VALIDATION_START_ANNOTATION,
    WAIT_START_ANNOTATION,
    Action,
    ActionKind,
)

S = State
#: NVIDIA's tests leave maxUnavailable unset, which ApplyState reads as every managed node.
UNLIMITED = UpgradePolicy(max_parallel_upgrades=0, max_unavailable="100%")
NOW = 10_000.0


def _states(nodes: Sequence[NodeObservation], actions: list[Action]) -> dict[str, State]:
    after = {node.name: node.state for node in nodes}
    for action in actions:
        if action.kind is ActionKind.SET_STATE:
            after[action.node] = State(action.value)
    return after


def _annotations(actions: list[Action], node: str) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for action in actions:
        if action.kind is ActionKind.ANNOTATE and action.node == node:
            key, _, value = action.value.partition("=")
            changes[key] = value or None
    return changes


def _pod_actions(actions: list[Action], kind: ActionKind) -> list[str]:
    return [action.node for action in actions if action.kind is kind]


def _node(name: str, state: State, **facts: object) -> NodeObservation:
    return NodeObservation(name, state, **facts)  # type: ignore[arg-type]


# --- upgrade_state_test.go, Describe("ApplyState"): admissions (common_manager.go GetUpgradesAvailable,
# upgrade_inplace.go ProcessUpgradeRequiredNodes)

def _required(count: int, **facts: object) -> list[NodeObservation]:
    return [_node(f"node{i}", S.REQUIRED, driver_pod_outdated=True, **facts) for i in range(1, count + 1)]


ADMISSIONS = [
    ("should schedule upgrade on all nodes if maxParallel upgrades is set to 0",
     _required(5), UNLIMITED, {S.CORDON: 5}),
    ("should start upgrade on limited amount of nodes if maxParallel upgrades is less than node count",
     _required(5), UpgradePolicy(max_parallel_upgrades=3, max_unavailable="100%"), {S.REQUIRED: 2, S.CORDON: 3}),
    ("should start additional upgrades if maxParallelUpgrades limit is not reached",
     [*_required(2), *[_node(f"c{i}", S.CORDON) for i in range(3)]],
     UpgradePolicy(max_parallel_upgrades=4, max_unavailable="100%", drain=True), {S.REQUIRED: 1, S.CORDON: 4}),
    # ours differs on purpose in the next two: the nodes cordoned by someone else wait at upgrade-required
    # (NVIDIA's: {CORDON: 5} and {REQUIRED: 2, CORDON: 3}, admitting node4 and node5 past maxUnavailable)
    ("should schedule upgrade all nodes if maxParallel upgrades is set to 0 and maxUnavailable is set to 100%",
     [*_required(3), *[_node(f"node{i}", S.REQUIRED, driver_pod_outdated=True, unschedulable=True) for i in (4, 5)]],
     UNLIMITED, {S.REQUIRED: 2, S.CORDON: 3}),
    ("should schedule upgrade based on maxUnavailable constraint if maxParallel upgrades is set to 0 and "
     "maxUnavailable is set to 50%",
     [*_required(3), *[_node(f"node{i}", S.REQUIRED, driver_pod_outdated=True, unschedulable=True) for i in (4, 5)]],
     UpgradePolicy(max_parallel_upgrades=0, max_unavailable="50%"), {S.REQUIRED: 4, S.CORDON: 1}),
    ("should schedule upgrade based on 50% maxUnavailable, with some unavailable nodes already upgraded",
     [*_required(3), *[_node(f"node{i}", S.DONE, unschedulable=True) for i in (4, 5)]],
     UpgradePolicy(max_parallel_upgrades=0, max_unavailable="50%"), {S.REQUIRED: 2, S.CORDON: 1, S.DONE: 2}),
    ("should start upgrade on limited amount of nodes if maxParallel upgrades and maxUnavailable are less than "
     "node count",
     _required(5), UpgradePolicy(max_parallel_upgrades=3, max_unavailable=2), {S.REQUIRED: 3, S.CORDON: 2}),
    ("should start additional upgrades if maxParallelUpgrades and maxUnavailable limits are not reached",
     [*_required(2), *[_node(f"c{i}", S.CORDON) for i in range(3)]],
     UpgradePolicy(max_parallel_upgrades=4, max_unavailable=4, drain=True), {S.REQUIRED: 1, S.CORDON: 4}),
]


@pytest.mark.parametrize(("name", "nodes", "policy", "counts"), ADMISSIONS, ids=[row[0][:60] for row in ADMISSIONS])
def test_admissions_as_nvidias_tests(name: str, nodes: list[NodeObservation], policy: UpgradePolicy,
                                     counts: dict[State, int]) -> None:
    after = _states(nodes, plan(nodes, policy, NOW))
    # the nodes already at cordon-required move on to wait-for-jobs in the same ApplyState: count them as NVIDIA's
    # test does (CordonRequired + WaitForJobsRequired)
    seen: dict[State, int] = {}
    for state in after.values():
        state = S.CORDON if state is S.WAIT_FOR_JOBS else state
        seen[state] = seen.get(state, 0) + 1
    assert seen == counts, name


# --- upgrade_state_test.go: entries (common_manager.go ProcessDoneOrUnknownNodes, podInSyncWithDS)

ENTRIES = [
    ("should move up-to-date nodes to Done and outdated nodes to UpgradeRequired states",
     [_node("u-done", S.UNKNOWN), _node("u-req", S.UNKNOWN, driver_pod_outdated=True),
      _node("d-done", S.DONE), _node("d-req", S.DONE, driver_pod_outdated=True)],
     {"u-done": S.DONE, "u-req": S.REQUIRED, "d-done": S.DONE, "d-req": S.REQUIRED}, {}),
    ("should move outdated nodes to UpgradeRequired state and annotate node if unschedulable",
     [_node("u-done", S.UNKNOWN), _node("u-req", S.UNKNOWN, driver_pod_outdated=True, unschedulable=True),
      _node("d-done", S.DONE), _node("d-req", S.DONE, driver_pod_outdated=True, unschedulable=True)],
     {"u-done": S.DONE, "u-req": S.REQUIRED, "d-done": S.DONE, "d-req": S.REQUIRED},
     {"u-req": {INITIAL_STATE_ANNOTATION: "true"}, "d-req": {INITIAL_STATE_ANNOTATION: "true"}}),
    ("should move up-to-date nodes with safe driver loading annotation to UpgradeRequired state",
     [_node("safe", S.DONE, safe_load_waiting=True)], {"safe": S.REQUIRED}, {}),
    ("should not move outdated node to UpgradeRequired states with orphaned pod",
     [_node("u", S.UNKNOWN, driver_pod_orphaned=True), _node("d", S.DONE, driver_pod_orphaned=True)],
     {"u": S.DONE, "d": S.DONE}, {}),
    ("should move outdated node to UpgradeRequired states with orphaned pod if upgrade-requested",
     [_node("u", S.UNKNOWN, driver_pod_orphaned=True, upgrade_requested=True),
      _node("d", S.DONE, driver_pod_orphaned=True, upgrade_requested=True)],
     {"u": S.REQUIRED, "d": S.REQUIRED}, {}),
]


@pytest.mark.parametrize(("name", "nodes", "states", "annotations"), ENTRIES, ids=[row[0][:60] for row in ENTRIES])
def test_entries_as_nvidias_tests(name: str, nodes: list[NodeObservation], states: dict[str, State],
                                  annotations: dict[str, dict[str, str]]) -> None:
    actions = plan(nodes, UNLIMITED, NOW)
    assert _states(nodes, actions) == states, name
    for node in nodes:
        assert _annotations(actions, node.name) == annotations.get(node.name, {}), (name, node.name)


# --- upgrade_state_test.go: the steps after admission

def test_skip_drain_if_its_disabled_by_policy() -> None:
    """"should skip drain if it's disabled by policy" (common_manager.go ProcessDrainNodes)."""
    nodes = [_node(f"n{i}", S.DRAIN, gpu_pods=1) for i in range(3)]
    assert set(_states(nodes, plan(nodes, UpgradePolicy(drain=False), NOW)).values()) == {S.POD_RESTART}


def test_schedule_drain_for_drain_required_nodes() -> None:
    """"should schedule drain for UpgradeStateDrainRequired nodes and pass drain config"."""
    nodes = [_node(f"n{i}", S.DRAIN, gpu_pods=1) for i in range(3)]
    actions = plan(nodes, UpgradePolicy(drain=True), NOW)
    assert _pod_actions(actions, ActionKind.DRAIN) == ["n0", "n1", "n2"]


def test_not_restart_pod_if_its_up_to_date_or_already_terminating() -> None:
    """"should not restart pod if it's up to date or already terminating" (ProcessPodRestartNodes): of an
    up-to-date pod (not Ready yet), an outdated Running one and an outdated terminating one, only the second is
    deleted."""
    nodes = [_node("current", S.POD_RESTART, driver_pod_ready=False),
             _node("outdated", S.POD_RESTART, driver_pod_outdated=True),
             _node("terminating", S.POD_RESTART, driver_pod_outdated=True, driver_pod_terminating=True)]
    assert _pod_actions(plan(nodes, UNLIMITED, NOW), ActionKind.DELETE_DRIVER_POD) == ["outdated"]


def test_unblock_loading_of_the_driver_instead_of_restarting_the_pod() -> None:
    """"should unblock loading of the driver instead of restarting the Pod when node is waiting for safe driver
    loading" (ProcessPodRestartNodes -> SafeDriverLoadManager.UnblockLoading)."""
    node = _node("safe", S.POD_RESTART, safe_load_waiting=True, driver_pod_ready=False)
    actions = plan([node], UNLIMITED, NOW)
    assert _pod_actions(actions, ActionKind.DELETE_DRIVER_POD) == []
    assert _annotations(actions, "safe") == {SAFE_LOAD_ANNOTATION: None}


@pytest.mark.parametrize(("name", "node", "state", "annotations"), [
    ("should move pod to UncordonRequired state if it's in PodRestart or UpgradeFailed, up to date and ready "
     "[with validation enabled, as gpu-operator runs it: validation-required]",
     _node("n", S.POD_RESTART), S.VALIDATION, {}),
    ("same, from UpgradeFailed [ours: validation-required first, docs table]",
     _node("n", S.FAILED, unschedulable=True), S.VALIDATION, {}),
    ("should move pod to UpgradeValidationRequired state if it's in PodRestart, driver pod is up-to-date and "
     "ready, and validation is enabled", _node("n", S.POD_RESTART), S.VALIDATION, {}),
    ("should move pod to UpgradeUncordonRequired state if it's in ValidationRequired and validation has completed",
     _node("n", S.VALIDATION, unschedulable=True, validator_ready=True), S.UNCORDON, {}),
    ("should move pod to UpgradeDone state if it's in ValidationRequired, validation has completed, and node was "
     "initially Unschedulable",
     _node("n", S.VALIDATION, unschedulable=True, validator_ready=True, initial_unschedulable=True), S.DONE,
     {INITIAL_STATE_ANNOTATION: None}),
    ("should uncordon UncordonRequired pod and finish upgrade", _node("n", S.UNCORDON, unschedulable=True), S.DONE,
     {}),
    ("should restart pod if it is Orphaned", _node("n", S.POD_RESTART, driver_pod_orphaned=True), S.POD_RESTART, {}),
    ("should not move to UncordonRequired state if it's in UpgradeFailed, and Orphaned Pod",
     _node("n", S.FAILED, unschedulable=True, driver_pod_orphaned=True), S.FAILED, {}),
    ("should move upgrade required node to CordonRequired states with orphaned pod and remove upgrade-requested "
     "annotation", _node("n", S.REQUIRED, driver_pod_orphaned=True, upgrade_requested=True), S.CORDON,
     {UPGRADE_REQUESTED_ANNOTATION: None}),
], ids=lambda value: value[:60] if isinstance(value, str) else None)
def test_steps_as_nvidias_tests(name: str, node: NodeObservation, state: State,
                                annotations: dict[str, str | None]) -> None:
    actions = plan([node], UNLIMITED, NOW)
    assert _states([node], actions)[node.name] is state, (name, actions)
    removed_failure = {key: value for key, value in _annotations(actions, node.name).items()
                       if key != "nvidia.com/gpu-driver-upgrade-failure-reason"}
    assert removed_failure == annotations, name
    if "Orphaned" in name and state is S.POD_RESTART:
        assert _pod_actions(actions, ActionKind.DELETE_DRIVER_POD) == ["n"]
    if "uncordon UncordonRequired" in name:
        assert _pod_actions(actions, ActionKind.UNCORDON) == ["n"]


@pytest.mark.parametrize(("restarts", "failing"), [
    ("pod1: main container not Ready, no repeated restarts", False),
    ("pod2: init finished, main not Ready, no repeated restarts", False),
    ("pod3: init finished, main not Ready with 11 restarts", True),
    ("pod4: init container with 11 restarts", True),
])
def test_failed_state_if_the_driver_pod_is_failing_with_repeated_restarts(restarts: str, failing: bool) -> None:
    """"should move pod to UpgradeFailed state if it's in PodRestart and driver pod is failing with repeated
    restarts" (common_manager.go isDriverPodFailing; pod_facts reduces the four pods, see test_cluster_state)."""
    node = _node("n", S.POD_RESTART, driver_pod_ready=False, driver_pod_failing=failing)
    assert _states([node], plan([node], UNLIMITED, NOW))["n"] is (S.FAILED if failing else S.POD_RESTART), restarts


# --- validation_manager_test.go (ValidationManager.Validate, handleTimeout; 600 s in NVIDIA's package)

@pytest.mark.parametrize(("name", "node", "state", "annotations"), [
    ("Validate() should return false when no validation pods are running",
     _node("n", S.VALIDATION, validator_present=False), S.VALIDATION, {}),
    ("Validate() should return true if validation pod is Running and Ready",
     _node("n", S.VALIDATION, validator_ready=True), S.UNCORDON, {}),
    ("Validate() should return false if validation pod is Running but not Ready",
     _node("n", S.VALIDATION), S.VALIDATION, {VALIDATION_START_ANNOTATION: str(int(NOW))}),
    ("Validate() should mark node as UpgradeFailed when validation does not complete before timeout",
     _node("n", S.VALIDATION, validation_started_at=NOW - 605), S.FAILED, {VALIDATION_START_ANNOTATION: None}),
    ("Validate() should remove annotation when validation completes before timeout",
     _node("n", S.VALIDATION, validator_ready=True, validation_started_at=NOW - 5), S.UNCORDON,
     {VALIDATION_START_ANNOTATION: None}),
], ids=lambda value: value[:60] if isinstance(value, str) else None)
def test_validation_as_nvidias_tests(name: str, node: NodeObservation, state: State,
                                     annotations: dict[str, str | None]) -> None:
    actions = plan([node], UpgradePolicy(validation_timeout_seconds=600), NOW)
    assert _states([node], actions)["n"] is state, name
    found = {key: value for key, value in _annotations(actions, "n").items()
             if key != "nvidia.com/gpu-driver-upgrade-failure-reason"}
    assert found == annotations, name


# --- pod_manager_test.go, Describe("ScheduleCheckOnPodCompletion")

def test_change_the_state_only_after_job_completion() -> None:
    """"should change the state of the node only after job completion": no start time is written."""
    node = _node("n", S.WAIT_FOR_JOBS, jobs_running=0)
    actions = plan([node], UpgradePolicy(wait_for_jobs=True), NOW)
    assert _states([node], actions)["n"] is S.POD_DELETION and _annotations(actions, "n") == {}


def test_not_change_the_state_while_a_workload_pod_runs() -> None:
    """"should not change the state of the node if workload pod is running": without a timeout, no start time."""
    node = _node("n", S.WAIT_FOR_JOBS, jobs_running=1)
    assert plan([node], UpgradePolicy(wait_for_jobs=True, wait_timeout_seconds=0), NOW) == []


def test_change_the_state_if_a_workload_pod_runs_and_the_timeout_is_reached() -> None:
    """"should change the state of the node if workload pod is running and timeout is reached" (timeout 30 s;
    HandleTimeoutOnPodCompletions writes the start time, then after 35 s moves on and removes it)."""
    policy = UpgradePolicy(wait_for_jobs=True, wait_timeout_seconds=30)
    first = plan([_node("n", S.WAIT_FOR_JOBS, jobs_running=1)], policy, NOW)
    assert _annotations(first, "n") == {WAIT_START_ANNOTATION: str(int(NOW))} and not _pod_actions(
        first, ActionKind.SET_STATE)
    later = _node("n", S.WAIT_FOR_JOBS, jobs_running=1, wait_started_at=NOW - 35)
    actions = plan([later], policy, NOW)
    assert _states([later], actions)["n"] is S.POD_DELETION
    assert _annotations(actions, "n") == {WAIT_START_ANNOTATION: None}


# --- safe_driver_load_manager_test.go

def test_unblock_loading_is_a_no_op_on_a_node_not_blocked() -> None:
    """"UnblockLoading ... should not fail when called on non blocked node": nothing to remove."""
    node = _node("n", S.POD_RESTART, driver_pod_ready=False)
    assert plan([node], UNLIMITED, NOW) == []
