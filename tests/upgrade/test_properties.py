"""Properties of the upgrade planner over random fleets, pod placements, PDBs, slow drivers, crashes and restarts.

Each example builds a fleet whose driver DaemonSet just got a new revision, then runs rounds: observe, plan, apply
the actions (a controller crash applies only a prefix of them; the next round re-plans from the API, as a
restarted controller does), let time pass. NVIDIA's invariants (k8s-operator-libs pkg/upgrade as vendored in
gpu-operator v26.7.0) hold after every round:

- common_manager.go GetUpgradesInProgress / GetUpgradesAvailable: the nodes in progress **and the failed ones**
  never exceed maxParallelUpgrades (a failed node blocks), and the unschedulable nodes stay within maxUnavailable
  (beyond those cordoned before);
- common_manager.go ProcessPodRestartNodes / isDriverPodInSync and ProcessValidationRequiredNodes: no node is
  uncordoned (nor set `uncordon-required`) before its new driver pod is Ready and its validator passed;
- pod_manager.go SchedulePodEviction / updateNodeToDrainOrFailed: a node is drained only after its GPU pod
  deletion failed, and only with `drain.enable`;

and no planned action redoes what already holds. At the end every node is upgrade-done or upgrade-failed (or
still upgrade-required: skipped, or held back by failed nodes' slots and cordons), done nodes run the new driver
with their schedulability restored, and only nodes given a fault failed.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.upgrade import IN_PROGRESS, State, UpgradePolicy, plan
from gpu_operator.upgrade.state_machine import HOLDS_SLOT, Action, ActionKind
from tests.upgrade.simulation import NEW, SimNode, apply, tick

ROUNDS = 400


@st.composite
def fleets(draw: st.DrawFn) -> tuple[dict[str, SimNode], UpgradePolicy]:
    count = draw(st.integers(1, 20))
    nodes = {}
    for index in range(count):
        name = f"gpu-{index:02d}"
        crash = draw(st.sampled_from([0, 0, 0, 0, 3, 13, None]))
        nodes[name] = SimNode(
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
            skip=draw(st.integers(0, 19)) == 0,
        )
    unavailable = draw(st.one_of(st.integers(1, 6), st.sampled_from(["10%", "25%", "50%", "100%"])))
    policy = UpgradePolicy(
        max_parallel_upgrades=draw(st.integers(0, 4)),
        max_unavailable=unavailable,
        wait_for_jobs=draw(st.booleans()),
        wait_timeout_seconds=draw(st.sampled_from([0, 120])),
        drain=draw(st.booleans()),
        validation_timeout_seconds=300,
    )
    return nodes, policy


def _redundant(node: SimNode, kind: ActionKind) -> bool:
    return ((kind is ActionKind.CORDON and node.unschedulable)
            or (kind is ActionKind.UNCORDON and not node.unschedulable)
            or (kind is ActionKind.DELETE_DRIVER_POD and node.driver_revision != "old")
            or (kind in (ActionKind.DELETE_GPU_PODS, ActionKind.DRAIN) and node.gpu_pods == 0))


def _check_invariants(node: SimNode, action: Action, policy: UpgradePolicy) -> None:
    uncordon = action.kind is ActionKind.UNCORDON or (
        action.kind is ActionKind.SET_STATE and action.value == State.UNCORDON.value)
    if uncordon:  # a Ready new driver and a passed validation come first
        assert node.driver_revision == NEW and node.driver_ready and node.validator_ready, (action, node)
    drain = action.kind is ActionKind.DRAIN or (
        action.kind is ActionKind.SET_STATE and action.value == State.DRAIN.value)
    if drain:  # only after the GPU pod deletion failed, and only when enabled
        assert policy.drain and node.deletion_failed, (action, node)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets(), st.data())
def test_a_rollout_keeps_nvidias_invariants_and_ends_done_or_failed(
        fleet: tuple[dict[str, SimNode], UpgradePolicy], data: st.DataObject) -> None:
    nodes, policy = fleet
    budget = policy.unavailable_budget(len(nodes))
    down_before = {n.name for n in nodes.values() if n.unschedulable or not n.ready}
    was_unschedulable = {n.name: n.unschedulable for n in nodes.values()}
    now, crashes_left, idle = 0.0, 10, 0
    for _ in range(ROUNDS):
        actions = plan([n.observe() for n in nodes.values()], policy, now)
        for action in actions:
            assert not _redundant(nodes[action.node], action.kind), (action, nodes[action.node])
            _check_invariants(nodes[action.node], action, policy)
        crash = crashes_left > 0 and actions and data.draw(st.integers(0, 9)) == 0
        crashes_left -= bool(crash)
        applied = actions[: data.draw(st.integers(0, len(actions) - 1))] if crash else actions
        for action in applied:
            apply(nodes, action)
        holding = sum(n.state in HOLDS_SLOT for n in nodes.values())
        if policy.max_parallel_upgrades:
            assert holding <= policy.max_parallel_upgrades, [(n.name, n.state) for n in nodes.values()]
        ours = sum(n.unschedulable for n in nodes.values() if n.name not in down_before)
        assert ours + len(down_before) <= max(budget, len(down_before)) or ours <= budget
        settled = not actions and all(n.state in (State.DONE, State.FAILED, State.REQUIRED) for n in nodes.values())
        idle = idle + 1 if settled else 0
        if idle > 20:  # a failed node's crash-looping driver may still come up
            break
        tick(nodes)
        now += 30
    faulty = {n.name for n in nodes.values()
              if n.validation_never or n.crash_ticks is None or (n.pdb_blocks and (not policy.drain or n.drain_blocks))}
    failed = {n.name for n in nodes.values() if n.state is State.FAILED}
    assert failed <= faulty
    held_back = [n for n in nodes.values() if n.state is State.REQUIRED and not n.skip]
    if held_back:  # only failed nodes' slots, or the unavailable budget, may hold the rest back
        slots_full = policy.max_parallel_upgrades and len(failed) >= policy.max_parallel_upgrades
        assert slots_full or sum(n.unschedulable or not n.ready for n in nodes.values()) >= budget, held_back
    for node in nodes.values():
        assert node.state in (State.DONE, State.FAILED, State.REQUIRED), node
        assert node.state not in IN_PROGRESS
        if node.state is State.DONE:
            assert node.driver_revision == NEW and node.driver_ready
            assert node.unschedulable == was_unschedulable[node.name]
        if node.skip and node.state is State.REQUIRED:
            assert node.driver_revision == "old" and node.unschedulable == was_unschedulable[node.name]


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
