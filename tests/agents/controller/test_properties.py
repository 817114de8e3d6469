"""The controller's reconcile over random fleets, pod placements, PDBs, faults, crashes and event orders.

Each example labels a fleet that only NFD has seen, then rolls a new driver revision out, round after round:
the reconcile plans from the cluster's state; the fake API carries the writes out, in the actuator's order, but a
controller crash may stop it after any write (the next round starts from what the API holds, as a restarted
controller does, and forgets the refused evictions it remembered); time passes between rounds. The DaemonSet
takes its time: a deleted driver pod may stay missing for a few ticks, or wait for the scheduler; some nodes have
no validator; some leave the driver DaemonSet mid-rollout (their driver deploy label turns `false`, as for a
host driver). After every round, never more than maxParallelUpgrades managed nodes are in progress and never more
nodes are cordoned by the upgrade than maxUnavailable allows. At the end every node is labelled for its operands;
a node that left has no upgrade state and its schedulability back (the upgrade never leaves its cordon behind);
every other node is upgrade-done or upgrade-failed (failed only where a fault was injected; held back in
upgrade-required only while failed or validating nodes hold the slots or cordoned nodes use maxUnavailable up;
validation-required only without a validator), runs the new driver when done, and has its schedulability back.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.agents.controller.reconcile import reconcile
from gpu_operator.agents.controller.settings import ControllerSettings, PodStepOptions
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy, label_changes
from gpu_operator.upgrade import STATE_LABEL, State, UpgradePolicy
from gpu_operator.upgrade.observation import HOLDS_SLOT
from tests.agents.controller.fake_cluster import DRIVER_LABEL, NEW, FakeCluster, FakeNode

OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])  # NVIDIA's whole container set
ROUNDS = 300


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[FakeCluster, ControllerSettings, list[int | None], dict[str, int]]:
    count = draw(st.integers(1, 20))
    nodes = {}
    for index in range(count):
        nodes[f"gpu-{index:02d}"] = FakeNode(
            f"gpu-{index:02d}", unschedulable=draw(st.integers(0, 9)) == 0, gpu_pods=draw(st.integers(0, 3)),
            jobs=draw(st.integers(0, 2)), pdb_blocks=draw(st.integers(0, 9)) == 0,
            validation_never=draw(st.integers(0, 9)) == 0,
            digest=draw(st.sampled_from(["digest-old", "digest-new"])),
            ready=draw(st.integers(0, 14)) != 0, install_ticks=draw(st.integers(0, 3)),
            crash_loop=draw(st.integers(0, 14)) == 0, gap_ticks=draw(st.sampled_from([0, 0, 0, 1, 3])),
            bind_ticks=draw(st.sampled_from([0, 0, 0, 2])), validator=draw(st.integers(0, 14)) != 0)
    unavailable = draw(st.one_of(st.integers(1, 5), st.sampled_from(["10%", "25%", "50%", "100%"])))
    policy = UpgradePolicy(max_parallel_upgrades=draw(st.integers(0, 4)), max_unavailable=unavailable,
                           wait_for_jobs=draw(st.booleans()), drain=draw(st.booleans()),
                           validation_timeout_seconds=60)
    controller = ControllerSettings("gpu-operator", LabellingPolicy(), policy,
                                    steps=PodStepOptions(pod_deletion=DrainOptions(timeout=30.0),
                                                         drain=DrainOptions(timeout=30.0)))
    crashes = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=ROUNDS, max_size=ROUNDS))
    leaving = {name: draw(st.integers(2, 60)) for name in nodes if draw(st.integers(0, 9)) == 0}
    return FakeCluster(nodes), controller, crashes, leaving


def _check_limits(cluster: FakeCluster, policy: UpgradePolicy, initially_cordoned: set[str]) -> None:
    states = {name: node.labels.get(STATE_LABEL, "") for name, node in cluster.nodes.items() if node.driver}
    holding = sum(State(s) in HOLDS_SLOT for s in states.values() if s)  # a failed node holds its slot
    if policy.max_parallel_upgrades:
        assert holding <= policy.max_parallel_upgrades
    cordoned_by_upgrade = {n for n, node in cluster.nodes.items() if node.unschedulable} - initially_cordoned
    assert len(cordoned_by_upgrade) <= max(policy.unavailable_budget(len(cluster.nodes)), 0) or \
        len(cordoned_by_upgrade | initially_cordoned) <= policy.unavailable_budget(len(cluster.nodes))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_rollout_keeps_the_limits_and_ends_done_or_failed(scenario: tuple[
        FakeCluster, ControllerSettings, list[int | None], dict[str, int]]) -> None:
    cluster, controller, crashes, leaving = scenario
    initially_cordoned = {name for name, node in cluster.nodes.items() if node.unschedulable}
    for round_, crash in enumerate(crashes):
        for name, at in leaving.items():
            if round_ == at:
                cluster.nodes[name].labels[DRIVER_LABEL] = "false"
        plan = reconcile(cluster.state(), controller, cluster.now)
        if not plan.patches and not plan.pod_actions and round_ > max(leaving.values(), default=0) and all(
                node.labels.get(STATE_LABEL) in ("upgrade-done", "upgrade-failed")
                or (node.name in leaving and STATE_LABEL not in node.labels)
                or (not node.validator and node.labels.get(STATE_LABEL) == "validation-required")
                for node in cluster.nodes.values()):
            break
        cluster.carry_out(plan, crash)
        if crash is not None:
            cluster.blocked_since.clear()  # a restarted controller remembers nothing but what the API holds
            cluster.blocked_for.clear()
        _check_limits(cluster, controller.upgrade, initially_cordoned)
        cluster.tick()
    stayed = [node for node in cluster.nodes.values() if node.name not in leaving]
    for name, node in cluster.nodes.items():
        assert label_changes(node.labels, controller.labelling) == {}, name
        state = node.labels.get(STATE_LABEL)
        faulty = node.validation_never or node.crash_loop or (node.pdb_blocks and node.gpu_pods > 0)
        if name in leaving:  # released: never left cordoned by the upgrade
            assert state in (None, "upgrade-done") and node.driver is None, (name, state)
            assert node.unschedulable == (name in initially_cordoned), name
        elif state == "upgrade-failed":
            assert faulty, f"{name} failed without a fault"
        elif state == "validation-required":  # no validator pod: NVIDIA waits without a clock
            assert not node.validator, name
        elif state == "upgrade-required" and node.unschedulable:
            pass  # cordoned by someone else: never taken into an upgrade (NVIDIA/gpu-operator#2820)
        elif state == "upgrade-required":  # held back: failed or validating nodes hold the slots, or cordons the budget
            blocking = sum(n.labels.get(STATE_LABEL) in ("upgrade-failed", "validation-required") for n in stayed)
            unavailable = sum(n.unschedulable or not n.ready for n in stayed)
            parallel = controller.upgrade.max_parallel_upgrades
            assert (parallel and blocking >= parallel) or \
                unavailable >= controller.upgrade.unavailable_budget(len(stayed)), name
        else:
            assert state == "upgrade-done", f"{name} ended in {state!r}"
            assert node.driver == NEW
            assert node.unschedulable == (name in initially_cordoned)
            assert not any(key.startswith("nvidia.com/gpu-driver-upgrade.node-initial") for key in node.annotations)
