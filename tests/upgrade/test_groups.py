"""Driver groups are upgraded apart, each within its own upgrade policy, whatever the node states.

NVIDIA's GetUpgradesAvailable (k8s-operator-libs pkg/upgrade/common_manager.go, as vendored in gpu-operator
v26.7.0) counts every managed node of the ClusterPolicy's driver against one `maxParallelUpgrades` and
`maxUnavailable`. Per driver group (one per NVIDIADriver here) the same counts are taken over the group's own
nodes, so a group is never admitted beyond its own limits, and a failure holds its own group's slots only.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.upgrade import CLUSTER_GROUP, HOLDS_SLOT, IN_PROGRESS, NodeObservation, State, UpgradePolicy, plan_groups
from gpu_operator.upgrade.observation import ActionKind

GROUPS = (CLUSTER_GROUP, "training", "t4")
ADMITTED = (State.CORDON.value, State.POD_RESTART.value)

policies = st.builds(
    UpgradePolicy,
    max_parallel_upgrades=st.integers(0, 4),
    max_unavailable=st.one_of(st.integers(0, 5), st.sampled_from(["0%", "10%", "25%", "50%", "100%"])),
)
#: mostly nodes that could be admitted, so that the limits are what holds them back
rarely = st.sampled_from([False, False, False, True])
nodes = st.builds(
    NodeObservation,
    name=st.just(""),
    state=st.sampled_from([*[State.REQUIRED] * len(State), *State]),
    unschedulable=rarely,
    ready=rarely.map(lambda value: not value),
    skip=rarely,
    driver_pod_outdated=st.booleans(),
    config_digest_changed=st.booleans(),
    upgrade_requested=st.booleans(),
)


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[tuple[str, NodeObservation]], dict[str, UpgradePolicy], set[str]]:
    members = draw(st.lists(st.tuples(st.sampled_from(GROUPS), nodes), max_size=40))
    fleet = [(group, NodeObservation(**{**node.__dict__, "name": f"gpu-{index:02d}"}))
             for index, (group, node) in enumerate(members)]
    return fleet, {group: draw(policies) for group in GROUPS}, draw(st.sets(st.sampled_from(GROUPS)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_no_group_is_admitted_beyond_its_own_limits(
        fleet: tuple[list[tuple[str, NodeObservation]], dict[str, UpgradePolicy], set[str]]) -> None:
    members, policies_, paused = fleet
    actions = plan_groups(members, policies_, 0.0, paused)
    group_of = {node.name: group for group, node in members}
    by_name = {node.name: node for _, node in members}
    admitted = {a.node for a in actions if a.kind is ActionKind.SET_STATE and a.value in ADMITTED
                and by_name[a.node].state is State.REQUIRED}
    assert not any(group_of[a.node] in paused for a in actions)  # a paused group takes no step
    assert not any(by_name[name].unschedulable for name in admitted)  # nor a node cordoned by someone else
    for group in GROUPS:
        policy = policies_[group]
        own = [node for g, node in members if g == group and node.driver_pod_present]
        taken = [name for name in admitted if group_of[name] == group]
        holding = sum(node.state in HOLDS_SLOT for node in own)
        if policy.max_parallel_upgrades and taken:
            assert holding + len(taken) <= policy.max_parallel_upgrades, (group, holding, taken)
        unavailable = sum(node.unschedulable or not node.ready or node.state in IN_PROGRESS for node in own)
        if taken:
            assert unavailable + len(taken) <= policy.unavailable_budget(len(own)), (group, unavailable, taken)


def test_a_failure_holds_its_own_groups_slot_only() -> None:
    one = UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%")
    members = [("training", NodeObservation("a", State.FAILED, unschedulable=True, driver_pod_ready=False)),
               ("training", NodeObservation("b", State.REQUIRED, driver_pod_outdated=True)),
               ("t4", NodeObservation("c", State.REQUIRED, driver_pod_outdated=True)),
               ("t4", NodeObservation("d", State.REQUIRED, driver_pod_outdated=True))]
    actions = plan_groups(members, {"training": one, "t4": one}, 0.0)
    assert [(a.node, a.value) for a in actions if a.kind is ActionKind.SET_STATE] == [("c", "cordon-required")]
    two = UpgradePolicy(max_parallel_upgrades=2, max_unavailable="100%")
    actions = plan_groups(members, {"training": one, "t4": two}, 0.0, paused={"training"})
    assert [(a.node, a.value) for a in actions if a.kind is ActionKind.SET_STATE] == [
        ("c", "cordon-required"), ("d", "cordon-required")]
