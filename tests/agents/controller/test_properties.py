"""The controller's reconcile over random fleets, pod placements, PDBs, faults, crashes and event orders.

Each example labels a fleet that only NFD has seen, then rolls a new driver revision out, round after round:
the reconcile plans from the cluster's state; the fake API carries the writes out, in the actuator's order, but a
controller crash may stop it after any write (the next round starts from what the API holds, as a restarted
controller does, and forgets the refused evictions it remembered); time passes between rounds. After every round,
never more than maxParallelUpgrades nodes are in progress and never more nodes are cordoned by the upgrade than
maxUnavailable allows. At the end every node is labelled for its operands, is upgrade-done or upgrade-failed
(failed only where a fault was injected; held back
in upgrade-required only while cordoned nodes use maxUnavailable up), runs the new driver when done, and has its schedulability back.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.agents.controller.reconcile import reconcile
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy, label_changes
from gpu_operator.upgrade import STATE_LABEL, State, UpgradePolicy
from gpu_operator.upgrade.state_machine import HOLDS_SLOT
from tests.agents.controller.fake_cluster import NEW, FakeCluster, FakeNode

OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])  # NVIDIA's whole container set
ROUNDS = 300


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[FakeCluster, ControllerSettings, list[int | None]]:
    count = draw(st.integers(1, 20))
    nodes = {}
    for index in range(count):
        nodes[f"gpu-{index:02d}"] = FakeNode(
            f"gpu-{index:02d}", unschedulable=draw(st.integers(0, 9)) == 0, gpu_pods=draw(st.integers(0, 3)),
            jobs=draw(st.integers(0, 2)), pdb_blocks=draw(st.integers(0, 9)) == 0,
            validation_never=draw(st.integers(0, 9)) == 0,
            digest=draw(st.sampled_from(["digest-old", "digest-new"])),
            ready=draw(st.integers(0, 14)) != 0, install_ticks=draw(st.integers(0, 3)),
            crash_loop=draw(st.integers(0, 14)) == 0)
    unavailable = draw(st.one_of(st.integers(1, 5), st.sampled_from(["10%", "25%", "50%", "100%"])))
    policy = UpgradePolicy(max_parallel_upgrades=draw(st.integers(0, 4)), max_unavailable=unavailable,
                           wait_for_jobs=draw(st.booleans()), drain=draw(st.booleans()),
                           validation_timeout_seconds=60)
    controller = ControllerSettings("gpu-operator", LabellingPolicy(), policy,
                                    pod_deletion=DrainOptions(timeout=30.0), drain=DrainOptions(timeout=30.0))
    crashes = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=ROUNDS, max_size=ROUNDS))
    return FakeCluster(nodes), controller, crashes


def _check_limits(cluster: FakeCluster, policy: UpgradePolicy, initially_cordoned: set[str]) -> None:
    states = {name: node.labels.get(STATE_LABEL, "") for name, node in cluster.nodes.items()}
    holding = sum(State(s) in HOLDS_SLOT for s in states.values() if s)  # a failed node holds its slot
    if policy.max_parallel_upgrades:
        assert holding <= policy.max_parallel_upgrades
    cordoned_by_upgrade = {n for n, node in cluster.nodes.items() if node.unschedulable} - initially_cordoned
    assert len(cordoned_by_upgrade) <= max(policy.unavailable_budget(len(cluster.nodes)), 0) or \
        len(cordoned_by_upgrade | initially_cordoned) <= policy.unavailable_budget(len(cluster.nodes))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_rollout_keeps_the_limits_and_ends_done_or_failed(scenario: tuple[FakeCluster, ControllerSettings,
                                                                           list[int | None]]) -> None:
    cluster, controller, crashes = scenario
    initially_cordoned = {name for name, node in cluster.nodes.items() if node.unschedulable}
    for crash in crashes:
        plan = reconcile(cluster.state(), controller, cluster.now)
        if not plan.patches and not plan.pod_actions and all(
                node.labels.get(STATE_LABEL) in ("upgrade-done", "upgrade-failed") for node in cluster.nodes.values()):
            break
        cluster.carry_out(plan, crash)
        if crash is not None:
            cluster.blocked_since.clear()  # a restarted controller remembers nothing but what the API holds
            cluster.blocked_for.clear()
        _check_limits(cluster, controller.upgrade, initially_cordoned)
        cluster.tick()
    for name, node in cluster.nodes.items():
        assert label_changes(node.labels, controller.labelling) == {}, name
        state = node.labels.get(STATE_LABEL)
        faulty = node.validation_never or node.crash_loop or (node.pdb_blocks and node.gpu_pods > 0)
        if state == "upgrade-failed":
            assert faulty, f"{name} failed without a fault"
        elif state == "upgrade-required":  # held back: failed nodes hold their slots, or their cordons the budget
            nodes = cluster.nodes.values()
            failed = sum(n.labels.get(STATE_LABEL) == "upgrade-failed" for n in nodes)
            unavailable = sum(n.unschedulable or not n.ready for n in nodes)
            parallel = controller.upgrade.max_parallel_upgrades
            assert (parallel and failed >= parallel) or \
                unavailable >= controller.upgrade.unavailable_budget(len(cluster.nodes)), name
        else:
            assert state == "upgrade-done", f"{name} ended in {state!r}"
            assert node.driver == NEW
            assert node.unschedulable == (name in initially_cordoned)
            assert not any(key.startswith("nvidia.com/gpu-driver-upgrade.node-initial") for key in node.annotations)
