"""Properties of the upgrade planner over random fleets, pod placements, PDBs, slow drivers, crashes and restarts.

Each example builds a fleet whose driver DaemonSet just got a new revision, then runs rounds: observe, plan, write
(the actuator's order: pod actions, then one patch per node; a controller crash stops after any write, and the next
round re-plans from the API, as a restarted controller does), let time pass. Some nodes carry an ownerless driver
pod (with or without `...upgrade-requested=true`), a driver waiting for its safe load, no validator, or leave the
driver DaemonSet's selection mid-rollout. NVIDIA's invariants (k8s-operator-libs pkg/upgrade as vendored in
gpu-operator v26.7.0) hold after every round:

- common_manager.go GetUpgradesInProgress / GetUpgradesAvailable: the managed nodes in progress **and the failed
  ones** never exceed maxParallelUpgrades (a failed node blocks), and no schedulable node is admitted past
  maxUnavailable (the unschedulable, NotReady and in-progress managed nodes, of a budget taken from the managed
  nodes of that round: nodes that leave may shrink it below what is already in progress);
- common_manager.go ProcessPodRestartNodes / isDriverPodInSync and ProcessValidationRequiredNodes: no node is
  uncordoned (nor set `uncordon-required`, nor done from validation) before its new driver pod is Ready and its
  validator passed - but for a node that lost its driver pod, whose cordon the upgrade releases;
- pod_manager.go SchedulePodEviction / updateNodeToDrainOrFailed: a node is drained only after its GPU pod
  deletion failed, and only with `drain.enable`;
- upgrade_state.go BuildState: a node without a driver pod gets nothing but its release (uncordon, annotations
  and state label removed);
- upgrade_inplace.go shouldRestartOnly: a node admitted on the restart-only path never has its GPU pods evicted
  or drained; ProcessUpgradeRequiredNodes consumes `...upgrade-requested` at `upgrade-required`;

and no planned action redoes what already holds. At the end every node that stayed is upgrade-done or
upgrade-failed (or still upgrade-required: skipped, or held back by failed and validating nodes' slots and
cordons; or validation-required without a validator, which NVIDIA waits for without a clock), done nodes run the
new driver with their schedulability restored, only nodes given a fault failed, ownerless pods nobody asked to
upgrade are left alone, and every node that left has the schedulability it had before.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.upgrade import IN_PROGRESS, State, UpgradePolicy, plan
from gpu_operator.upgrade.observation import (
    HOLDS_SLOT,
    SAFE_LOAD_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    Action,
    ActionKind,
)
from tests.upgrade.simulation import NEW, OLD, SimNode, apply, tick, writes

ROUNDS = 400


def _node(draw: st.DrawFn, name: str) -> SimNode:
    crash = draw(st.sampled_from([0, 0, 0, 0, 3, 13, None]))
    kind = draw(st.sampled_from(["plain"] * 10 + ["orphan", "orphan-requested", "safe-load"]))
    node = SimNode(
        name,
        unschedulable=draw(st.integers(0, 9)) == 0,
        ready=draw(st.integers(0, 14)) != 0,
        digest_changed=draw(st.booleans()),
        gpu_pods=draw(st.integers(0, 3)),
        jobs=draw(st.integers(0, 2)),
        job_ticks_left=draw(st.integers(0, 5)),
        install_ticks=draw(st.integers(0, 4)),
        crash_ticks=crash,
        pdb_blocks=draw(st.integers(0, 9)) == 0,
        drain_blocks=draw(st.integers(0, 1)) == 0,
        validation_never=draw(st.integers(0, 14)) == 0,
        validator_present=draw(st.integers(0, 19)) != 0,
        skip=draw(st.integers(0, 19)) == 0,
    )
    if kind.startswith("orphan"):
        node.orphaned = True
        if kind == "orphan-requested":
            node.annotations[UPGRADE_REQUESTED_ANNOTATION] = "true"
    elif kind == "safe-load":  # a new driver pod blocked in its init container, waiting for the workloads to go
        node.driver_revision, node.driver_ready = NEW, False
        node.annotations[SAFE_LOAD_ANNOTATION] = "true"
    return node


@st.composite
def fleets(draw: st.DrawFn) -> tuple[dict[str, SimNode], UpgradePolicy, dict[str, int]]:
    count = draw(st.integers(1, 20))
    nodes = {f"gpu-{index:02d}": _node(draw, f"gpu-{index:02d}") for index in range(count)}
    leaving = {name: draw(st.integers(0, 60)) for name in nodes if draw(st.integers(0, 14)) == 0}
    unavailable = draw(st.one_of(st.integers(1, 6), st.sampled_from(["10%", "25%", "50%", "100%"])))
    policy = UpgradePolicy(
        max_parallel_upgrades=draw(st.integers(0, 4)),
        max_unavailable=unavailable,
        wait_for_jobs=draw(st.booleans()),
        wait_timeout_seconds=draw(st.sampled_from([0, 120])),
        drain=draw(st.booleans()),
        validation_timeout_seconds=draw(st.sampled_from([0, 300])),
    )
    return nodes, policy, leaving


def _redundant(node: SimNode, kind: ActionKind) -> bool:
    in_sync = node.driver_revision == NEW and not node.orphaned
    return ((kind is ActionKind.CORDON and node.unschedulable)
            or (kind is ActionKind.UNCORDON and not node.unschedulable)
            or (kind is ActionKind.DELETE_DRIVER_POD and (node.driver_revision is None or in_sync))
            or (kind in (ActionKind.DELETE_GPU_PODS, ActionKind.DRAIN) and node.gpu_pods == 0))


def _check_invariants(node: SimNode, action: Action, policy: UpgradePolicy, restart_only: set[str]) -> None:
    if node.driver_revision is None:  # no driver pod: nothing but the release
        assert action.kind in (ActionKind.UNCORDON, ActionKind.ANNOTATE) or (
            action.kind is ActionKind.SET_STATE and action.value == ""), (action, node)
        assert action.kind is not ActionKind.ANNOTATE or action.value.endswith("="), (action, node)
        return
    validated = action.kind is ActionKind.UNCORDON or (action.kind is ActionKind.SET_STATE and (
        action.value == State.UNCORDON.value or (action.value == State.DONE.value and node.state is State.VALIDATION)))
    if validated:  # a Ready new driver and a passed validation come first
        assert node.driver_revision == NEW and node.driver_ready and node.validator_ready, (action, node)
    drain = action.kind is ActionKind.DRAIN or (
        action.kind is ActionKind.SET_STATE and action.value == State.DRAIN.value)
    if drain:  # only after the GPU pod deletion failed, and only when enabled
        assert policy.drain and node.deletion_failed, (action, node)
    if action.kind in (ActionKind.DELETE_GPU_PODS, ActionKind.DRAIN):
        assert node.name not in restart_only, (action, node)


def _check_budget(nodes: dict[str, SimNode], actions: list[Action], policy: UpgradePolicy) -> None:
    managed = [n for n in nodes.values() if n.driver_revision is not None]
    unavailable = sum(n.unschedulable or not n.ready or n.state in IN_PROGRESS for n in managed)
    admitted = {a.node for a in actions if a.kind is ActionKind.SET_STATE and nodes[a.node].state is State.REQUIRED
                and a.value in (State.CORDON.value, State.POD_RESTART.value)}
    # a node cordoned by someone else is never taken into an upgrade (NVIDIA/gpu-operator#2820)
    assert not {name for name in admitted if nodes[name].unschedulable}, admitted
    if admitted:
        assert unavailable + len(admitted) <= policy.unavailable_budget(len(managed)), (admitted, unavailable)


def _restart_only_admissions(nodes: dict[str, SimNode], actions: list[Action]) -> set[str]:
    return {a.node for a in actions if a.kind is ActionKind.SET_STATE and a.value == State.POD_RESTART.value
            and nodes[a.node].state is State.REQUIRED}


def _check_requested_consumed(nodes: dict[str, SimNode], actions: list[Action]) -> None:
    removed = {a.node for a in actions if a.value == f"{UPGRADE_REQUESTED_ANNOTATION}="}
    for node in nodes.values():
        asked = node.annotations.get(UPGRADE_REQUESTED_ANNOTATION) == "true"
        if node.state is State.REQUIRED and node.driver_revision is not None and asked:
            assert node.name in removed, node


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets(), st.data())
def test_a_rollout_keeps_nvidias_invariants_and_ends_done_or_failed(
        fleet: tuple[dict[str, SimNode], UpgradePolicy, dict[str, int]], data: st.DataObject) -> None:
    nodes, policy, leaving = fleet
    was_unschedulable = {n.name: n.unschedulable for n in nodes.values()}
    asked = {n.name for n in nodes.values() if UPGRADE_REQUESTED_ANNOTATION in n.annotations}
    restart_only: set[str] = set()
    now, crashes_left, idle = 0.0, 10, 0
    for round_ in range(ROUNDS):
        for name, at in leaving.items():
            nodes[name].left = nodes[name].left or round_ >= at
        actions = plan([n.observe() for n in nodes.values()], policy, now)
        for action in actions:
            assert not _redundant(nodes[action.node], action.kind), (action, nodes[action.node])
            _check_invariants(nodes[action.node], action, policy, restart_only)
        _check_requested_consumed(nodes, actions)
        _check_budget(nodes, actions, policy)
        restart_only |= _restart_only_admissions(nodes, actions)
        steps = writes(nodes, actions)
        crash = crashes_left > 0 and steps and data.draw(st.integers(0, 9)) == 0
        crashes_left -= bool(crash)
        for write in steps[: data.draw(st.integers(0, len(steps) - 1))] if crash else steps:
            write()
        managed = [n for n in nodes.values() if n.driver_revision is not None]
        holding = sum(n.state in HOLDS_SLOT for n in managed)
        if policy.max_parallel_upgrades:
            assert holding <= policy.max_parallel_upgrades, [(n.name, n.state) for n in nodes.values()]
        settled = not actions and all(n.state in (State.DONE, State.FAILED, State.REQUIRED, State.UNKNOWN)
                                      or not n.validator_present for n in nodes.values())
        idle = idle + 1 if settled else 0
        if idle > 20 and round_ > max(leaving.values(), default=0):  # a failed node's driver may still come up
            break
        tick(nodes)
        now += 30
    _check_the_end(nodes, policy, was_unschedulable, asked)


def _check_the_end(nodes: dict[str, SimNode], policy: UpgradePolicy, was_unschedulable: dict[str, bool],
                   asked: set[str]) -> None:
    stayed = {name: node for name, node in nodes.items() if not node.left}
    for node in nodes.values():
        if node.left:  # released: what the upgrade held is given back
            assert node.state in (State.UNKNOWN, State.DONE) and node.unschedulable == was_unschedulable[node.name]
    faulty = {n.name for n in stayed.values()
              if n.validation_never or n.crash_ticks is None or (n.pdb_blocks and (not policy.drain or n.drain_blocks))}
    failed = {n.name for n in stayed.values() if n.state is State.FAILED}
    assert failed <= faulty
    validating = [n for n in stayed.values() if n.state is State.VALIDATION]
    assert all(not n.validator_present or (n.validation_never and not policy.validation_timeout_seconds)
               for n in validating), validating
    held_back = [n for n in stayed.values() if n.state is State.REQUIRED and not n.skip and not n.unschedulable]
    if held_back:  # besides nodes cordoned by someone else, only failed and validating nodes' slots, or the
        # unavailable budget, may hold the rest back
        slots_full = policy.max_parallel_upgrades and len(failed) + len(validating) >= policy.max_parallel_upgrades
        budget = policy.unavailable_budget(len(stayed))
        assert slots_full or sum(n.unschedulable or not n.ready for n in stayed.values()) >= budget, held_back
    for node in stayed.values():
        assert node.state in (State.DONE, State.FAILED, State.REQUIRED, State.VALIDATION), node
        assert node.state not in IN_PROGRESS - {State.VALIDATION}
        if node.state is State.DONE and node.orphaned:  # nobody asked: NVIDIA leaves an ownerless pod alone
            assert node.name not in asked and node.driver_revision == OLD
        elif node.state is State.DONE:
            assert node.driver_revision == NEW and node.driver_ready and not node.annotations.get(SAFE_LOAD_ANNOTATION)
            assert node.unschedulable == was_unschedulable[node.name]
        if node.skip and node.state is State.REQUIRED:
            assert node.driver_revision in (OLD, NEW) and node.unschedulable == was_unschedulable[node.name]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(0, 5))
def test_at_max_parallel_one_a_failed_node_holds_every_further_admission(count: int, bad: int) -> None:
    """common_manager.go GetUpgradesInProgress counts `upgrade-failed` nodes, so GetUpgradesAvailable leaves no slot
    at maxParallelUpgrades 1 once a node failed: a driver that crash-loops on one node reaches no other."""
    nodes = {f"gpu-{i}": SimNode(f"gpu-{i}", crash_ticks=None if i == min(bad, count - 1) else 0)
             for i in range(count)}
    policy = UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%")
    now = 0.0
    for _ in range(200):
        for action in plan([n.observe() for n in nodes.values()], policy, now):
            apply(nodes, action)
        tick(nodes)
        now += 30
    bad_name = f"gpu-{min(bad, count - 1)}"
    assert nodes[bad_name].state is State.FAILED
    for name, node in nodes.items():
        if name < bad_name:
            assert node.state is State.DONE
        elif name > bad_name:  # never admitted: still on the old driver, never cordoned
            assert node.state is State.REQUIRED and node.driver_revision == "old" and not node.unschedulable
