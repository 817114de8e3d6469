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
