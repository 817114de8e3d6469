"""The upgrade planner's reconcile (a pure function of the observed nodes) at 100, 1,000 and 5,000 nodes.

Each fleet is mid-rollout: a tenth of the nodes in progress across the states, the rest waiting or done. Printed:
time per reconcile and per node, so its growth with the node count shows (goal: linear). NVIDIA's controller
requeues every 2 minutes besides events; this planner costs the time shown per event.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.upgrade import IN_PROGRESS, NodeObservation, State, UpgradePolicy, plan

STATES = sorted(IN_PROGRESS, key=lambda s: s.value)
POLICY = UpgradePolicy(max_parallel_upgrades=50, max_unavailable="10%", wait_for_jobs=True, drain=True)


def _fleet(count: int) -> list[NodeObservation]:
    nodes = []
    for index in range(count):
        if index % 10 == 0:
            state = STATES[index // 10 % len(STATES)]
        else:
            state = State.REQUIRED if index % 3 else State.DONE
        nodes.append(NodeObservation(f"gpu-{index:05d}", state, unschedulable=state in IN_PROGRESS,
                                     driver_pod_outdated=state is not State.DONE, gpu_pods=index % 3,
                                     validation_started_at=0.0))
    return nodes


@pytest.mark.parametrize("count", [100, 1000, 5000])
def test_reconcile(benchmark: Any, capsys: pytest.CaptureFixture[str], count: int) -> None:
    fleet = _fleet(count)
    actions = benchmark(plan, fleet, POLICY, 60.0)
    assert actions
    mean = benchmark.stats.stats.mean
    benchmark.extra_info.update(nodes=count, per_node_us=mean / count * 1e6)
    with capsys.disabled():
        print(f"\n  {count} nodes: {mean * 1e3:.3f} ms per reconcile, {mean / count * 1e6:.2f} us per node")


def _controller_cluster(count: int) -> Any:
    from tests.agents.controller.fake_cluster import FakeCluster, FakeNode

    return FakeCluster({f"gpu-{i:05d}": FakeNode(f"gpu-{i:05d}", gpu_pods=i % 2) for i in range(count)})


@pytest.mark.parametrize("count", [100, 1000, 5000])
def test_controller_round(benchmark: Any, capsys: pytest.CaptureFixture[str], count: int) -> None:
    """The whole controller decision (labelling + upgrade + events) over a fleet mid-rollout, then the rollout's
    rounds at maxParallelUpgrades 50 against the in-memory API: rounds needed and writes per node."""
    from gpu_operator.agents.controller.reconcile import reconcile
    from gpu_operator.agents.controller.settings import ControllerSettings
    from gpu_operator.labels import LabellingPolicy

    settings = ControllerSettings("ns", LabellingPolicy(),
                                  UpgradePolicy(max_parallel_upgrades=50, max_unavailable="100%"))
    cluster = _controller_cluster(count)
    for _ in range(3):  # labelled, done at the old driver, then upgrade-required: a rollout's first rounds
        cluster.carry_out(reconcile(cluster.state(), settings, cluster.now))
        cluster.tick()
    state = cluster.state()
    benchmark(reconcile, state, settings, cluster.now)
    mean = benchmark.stats.stats.mean
    rounds = writes = 0
    while rounds < 10_000:
        plan = reconcile(cluster.state(), settings, cluster.now)
        if not plan.patches and not plan.pod_actions and all(
                n.labels.get("nvidia.com/gpu-driver-upgrade-state") == "upgrade-done" for n in cluster.nodes.values()):
            break
        writes += len(plan.patches) + len(plan.pod_actions) + len(plan.events)
        cluster.carry_out(plan)
        cluster.tick(1.0)
        rounds += 1
    benchmark.extra_info.update(nodes=count, per_node_us=mean / count * 1e6, rounds=rounds, writes=writes)
    with capsys.disabled():
        print(f"\n  controller, {count} nodes: {mean * 1e3:.2f} ms per round ({mean / count * 1e6:.2f} us per node); "
              f"rollout at maxParallelUpgrades 50: {rounds} rounds, {writes / count:.1f} writes per node "
              f"(patches, evictions, deletions, events); NVIDIA's 2-minute requeue alone: "
              f"{-(-count // 50) * 120 / 60:.0f} min for the same {-(-count // 50)} waves if each waited one requeue")
