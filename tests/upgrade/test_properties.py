"""Properties of the upgrade planner over random fleets, pod placements, PDBs, failures and controller crashes.

Each example builds a fleet whose driver DaemonSet just got a new revision, then runs rounds: observe, plan, apply
the actions (a controller crash applies only a prefix of them; the next round re-plans from the API, as a
restarted controller does), let time pass. After every round: never more than maxParallelUpgrades nodes in
progress, never more unschedulable nodes than maxUnavailable allows (beyond those cordoned before), and no planned
action redoes what already holds. At the end every node is upgrade-done or upgrade-failed (unless skipped, or held
back only because failed nodes use up maxUnavailable), done nodes run the new driver with their schedulability
restored, and only the nodes given a fault failed.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.upgrade import IN_PROGRESS, State, UpgradePolicy, plan
from gpu_operator.upgrade.state_machine import ActionKind
from tests.upgrade.simulation import NEW, SimNode, apply, tick

ROUNDS = 400


@st.composite
def fleets(draw: st.DrawFn) -> tuple[dict[str, SimNode], UpgradePolicy]:
    count = draw(st.integers(1, 25))
    nodes = {}
    for index in range(count):
        name = f"gpu-{index:02d}"
        nodes[name] = SimNode(
            name,
            unschedulable=draw(st.booleans().filter(lambda _: True)) and draw(st.integers(0, 9)) == 0,
            digest_changed=draw(st.booleans()),
            gpu_pods=draw(st.integers(0, 3)),
            jobs=draw(st.integers(0, 2)),
            job_ticks_left=draw(st.integers(0, 5)),
            pdb_blocks=draw(st.integers(0, 14)) == 0,
            validation_never=draw(st.integers(0, 14)) == 0,
            skip=draw(st.integers(0, 19)) == 0,
        )
    unavailable = draw(st.one_of(st.integers(1, 6), st.sampled_from(["10%", "25%", "50%", "100%"])))
    policy = UpgradePolicy(
        max_parallel_upgrades=draw(st.integers(0, 6)),
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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets(), st.data())
def test_a_rollout_keeps_its_limits_and_ends_done_or_failed(fleet: tuple[dict[str, SimNode], UpgradePolicy],
                                                            data: st.DataObject) -> None:
    nodes, policy = fleet
    managed = [n for n in nodes.values() if not n.skip]
    budget = policy.unavailable_budget(len(managed))
    cordoned_before = {n.name for n in managed if n.unschedulable}
    was_unschedulable = {n.name: n.unschedulable for n in nodes.values()}
    now = 0.0
    for _ in range(ROUNDS):
        actions = plan([n.observe() for n in nodes.values()], policy, now)
        for action in actions:
            assert not _redundant(nodes[action.node], action.kind), (action, nodes[action.node])
        crash = data.draw(st.integers(0, 9)) == 0 and actions
        applied = actions[: data.draw(st.integers(0, len(actions) - 1))] if crash else actions
        for action in applied:
            apply(nodes, action)
        in_progress = sum(n.state in IN_PROGRESS for n in managed)
        if policy.max_parallel_upgrades:
            assert in_progress <= policy.max_parallel_upgrades
        ours = sum(n.unschedulable for n in managed if n.name not in cordoned_before)
        assert ours + len(cordoned_before) <= max(budget, len(cordoned_before)) or ours <= budget
        if not actions and all(n.state in (State.DONE, State.FAILED, State.REQUIRED) for n in managed):
            if not any(n.state is State.REQUIRED for n in managed):
                break
        tick(nodes)
        now += 30
    failed = {n.name for n in managed if n.state is State.FAILED}
    faulty = {n.name for n in managed if n.validation_never or (n.pdb_blocks and n.gpu_pods)}
    assert failed <= faulty | {n.name for n in managed if n.pdb_blocks}
    held_back = [n for n in managed if n.state is State.REQUIRED]
    if held_back:  # only the failed nodes' cordons may hold the rest back
        assert sum(n.unschedulable for n in managed) >= budget or not budget
    for node in managed:
        assert node.state in (State.DONE, State.FAILED, State.REQUIRED), node
        if node.state is State.DONE:
            assert node.driver_revision == NEW
            assert node.unschedulable == was_unschedulable[node.name]
    for node in nodes.values():
        if node.skip:
            assert node.state is State.UNKNOWN and node.driver_revision == "old" and not node.history
