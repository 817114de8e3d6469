"""The staged driver rollout against the single-DaemonSet rollout of the same 1,000 nodes, in the same run.

1,000 GPU nodes in 4 AKS pools (`kubernetes.azure.com/agentpool`): `canary` (10 nodes), `pool2`, `pool3` and
`pool4` (330 each), every node `upgrade-done` on one driver DaemonSet whose template then changed;
maxParallelUpgrades 50, maxUnavailable 100%.

1. In memory (always): the controller's reconcile against the in-memory cluster
   (tests/agents/controller/fake_cluster.py plays the API server, the DaemonSet controller and the kubelet), one
   round per 10 simulated seconds, the gate's memory carried from each plan to the next round as the controller
   keeps it in its status ConfigMap. (a) the single-DaemonSet rollout: no stages; (b) the staged rollout:
   `canary` (soak 600 s), then `pool2` (soak 600 s), then `*`. For each: simulated time to every node
   `upgrade-done` on the new driver, rounds, the controller's CPU per round (`time.process_time` around
   `reconcile` only; median and p95) and the memory one round allocates at its peak (tracemalloc, one round at
   half the fleet done). pytest-benchmark times one round at half the fleet done for each, so `make bench` lists
   them side by side. Asserted: behaviour only (both finish; the staged rollout never has a node outside its
   stage in an upgrade, and no node of a later stage is cordoned before the earlier stage's soak ended).
2. Against real KWOK nodes (opt-in: `BENCH_KWOK=1`, with `make e2e-tools` built; run it with the e2e
   virtualenv): see :mod:`tests.bench.staged_rollout_kwok`.

Nothing here asserts a time: the numbers are printed and kept in the benchmark's extra_info.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
import tracemalloc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpu_operator.agents.controller.cluster_state import ClusterState
from gpu_operator.agents.controller.driver_owners import POOL_LABEL
from gpu_operator.agents.controller.reconcile import UPGRADE_ENABLED_ANNOTATION, reconcile
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy
from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
from gpu_operator.upgrade.stages import SETTLED_STATES, RolloutMemory, RolloutPolicy, RolloutStage, stage_of
from tests.agents.controller.fake_cluster import NFD_PCI, FakeCluster, FakeNode

#: pool -> nodes: a canary, then three pools of 330
POOLS = {"canary": 10, "pool2": 330, "pool3": 330, "pool4": 330}
SOAK = 600
ROUND_SECONDS = 10.0
MAX_ROUNDS = 2_000
ROLLOUT = RolloutPolicy((RolloutStage("canary", ("canary",), SOAK), RolloutStage("pool2", ("pool2",), SOAK),
                         RolloutStage("rest", ("*",))))
OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])
LABELLED = {**NFD_PCI, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.client": "true",
            **{f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}}
PLAIN = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                           UpgradePolicy(max_parallel_upgrades=50, max_unavailable="100%"))
STAGED = dataclasses.replace(PLAIN, rollout=ROLLOUT)
MODES = {"single-daemonset": PLAIN, "staged": STAGED}


def fleet() -> FakeCluster:
    """Every node labelled and `upgrade-done` on the old driver; the DaemonSet's newest revision is the new one."""
    nodes = {}
    for pool, count in POOLS.items():
        for index in range(count):
            name = f"{pool}-{index:03d}"
            nodes[name] = FakeNode(name, labels={**LABELLED, POOL_LABEL: pool, STATE_LABEL: "upgrade-done"},
                                   annotations={UPGRADE_ENABLED_ANNOTATION: "true"})
    return FakeCluster(nodes)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass
class Rollout:
    """One rollout to done: each round's CPU, when each node was first cordoned, when each stage settled (every
    node `upgrade-done` on the new driver, as the round saw it), the nodes in an upgrade per round, and the state
    at half the fleet done (for the per-round benchmark)."""

    mode: str
    settings: ControllerSettings
    cluster: FakeCluster = field(default_factory=fleet)
    memory: RolloutMemory = RolloutMemory()
    cpu: list[float] = field(default_factory=list)
    first_cordoned: dict[str, float] = field(default_factory=dict)
    settled_at: dict[str, float] = field(default_factory=dict)
    upgrading_stages: list[frozenset[str]] = field(default_factory=list)
    halfway: ClusterState | None = None
    started: float = 0.0
    finished_at: float | None = None

    def state(self) -> ClusterState:
        return dataclasses.replace(self.cluster.state(), rollout_memory=self.memory)

    def stage(self, node: str) -> str:
        return stage_of(ROLLOUT, self.cluster.nodes[node].labels[POOL_LABEL])

    def done(self) -> bool:
        return all(node.labels.get(STATE_LABEL) == "upgrade-done" and node.driver == self.cluster.revision
                   and node.driver_ready and not node.unschedulable for node in self.cluster.nodes.values())

    def observe(self) -> None:
        """What the cluster shows before a round: the stages settled, the stages with a node in an upgrade."""
        by_stage: dict[str, list[FakeNode]] = {}
        for name, node in self.cluster.nodes.items():
            by_stage.setdefault(self.stage(name), []).append(node)
        for stage, nodes in by_stage.items():
            if all(n.driver == self.cluster.revision and n.labels.get(STATE_LABEL) in SETTLED_STATES for n in nodes):
                self.settled_at.setdefault(stage, self.cluster.now)
        self.upgrading_stages.append(frozenset(
            self.stage(name) for name, node in self.cluster.nodes.items()
            if node.unschedulable or node.labels.get(STATE_LABEL) not in (*SETTLED_STATES, "upgrade-required")))

    def run(self) -> Rollout:
        self.started = self.cluster.now
        while len(self.cpu) < MAX_ROUNDS:
            self.observe()
            if self.done():
                self.finished_at = self.cluster.now
                break
            state = self.state()
            if self.halfway is None and sum(n.driver == self.cluster.revision for n in self.cluster.nodes.values()) \
                    >= len(self.cluster.nodes) // 2:
                self.halfway = state
            before = time.process_time()
            plan = reconcile(state, self.settings, self.cluster.now)
            self.cpu.append(time.process_time() - before)
            if plan.rollout is not None:
                assert not plan.rollout.halted, plan.rollout.halted
                self.memory = plan.rollout.memory
            self.cluster.carry_out(plan)
            for name, node in self.cluster.nodes.items():
                if node.unschedulable:
                    self.first_cordoned.setdefault(name, self.cluster.now)
            self.cluster.tick(ROUND_SECONDS)
        return self

    @property
    def seconds(self) -> float:
        assert self.finished_at is not None, f"{self.mode}: not done after {MAX_ROUNDS} rounds"
        return self.finished_at - self.started

    def peak_round_bytes(self) -> int:
        """The memory one round at half the fleet done allocates at its peak."""
        assert self.halfway is not None
        tracemalloc.start()
        try:
            reconcile(self.halfway, self.settings, self.cluster.now)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def summary(self) -> dict[str, Any]:
        return {"nodes": len(self.cluster.nodes), "pools": len(POOLS), "simulated_seconds_to_done": self.seconds,
                "rounds": len(self.cpu), "cpu_ms_median": statistics.median(self.cpu) * 1e3,
                "cpu_ms_p95": percentile(self.cpu, 0.95) * 1e3, "cpu_s_total": sum(self.cpu),
                "peak_round_kib": self.peak_round_bytes() / 1024}


@pytest.fixture(scope="module")
def rollouts() -> Mapping[str, Rollout]:
    """Both rollouts of the same fleet, one after the other in this run."""
    return {mode: Rollout(mode, settings).run() for mode, settings in MODES.items()}


@pytest.fixture(scope="module")
def numbers(rollouts: Mapping[str, Rollout]) -> Mapping[str, Mapping[str, Any]]:
    return {mode: run.summary() for mode, run in rollouts.items()}


def _line(mode: str, numbers: Mapping[str, Any]) -> str:
    return (f"  {mode:>16}: {numbers['simulated_seconds_to_done'] / 60:6.1f} simulated min to done in "
            f"{numbers['rounds']} rounds; controller CPU per round median {numbers['cpu_ms_median']:.1f} ms, "
            f"p95 {numbers['cpu_ms_p95']:.1f} ms ({numbers['cpu_s_total']:.1f} s in all); "
            f"peak of a round {numbers['peak_round_kib'] / 1024:.1f} MiB")


def test_both_rollouts_finish_and_the_staged_one_keeps_to_its_stages(
        capsys: pytest.CaptureFixture[str], rollouts: Mapping[str, Rollout],
        numbers: Mapping[str, Mapping[str, Any]]) -> None:
    plain, staged = rollouts["single-daemonset"], rollouts["staged"]
    assert plain.done() and staged.done()
    # without stages, the pools upgrade side by side; with them, one stage at a time
    assert any(len(stages) > 1 for stages in plain.upgrading_stages)
    assert all(len(stages) <= 1 for stages in staged.upgrading_stages)
    first = {stage: min(at for name, at in staged.first_cordoned.items() if staged.stage(name) == stage)
             for stage in ("canary", "pool2", "rest")}
    assert first["pool2"] >= staged.settled_at["canary"] + SOAK, (first, staged.settled_at)
    assert first["rest"] >= staged.settled_at["pool2"] + SOAK, (first, staged.settled_at)
    assert staged.seconds > plain.seconds + 2 * SOAK
    with capsys.disabled():
        print(f"\n  {len(plain.cluster.nodes)} nodes in pools {POOLS}, maxParallelUpgrades 50, one round per "
              f"{ROUND_SECONDS:.0f} simulated s; both rollouts in this run:")
        for mode, values in numbers.items():
            print(_line(mode, values))


@pytest.mark.parametrize("mode", list(MODES))
def test_round_at_half_the_fleet_done(benchmark: Any, capsys: pytest.CaptureFixture[str],
                                      rollouts: Mapping[str, Rollout], numbers: Mapping[str, Mapping[str, Any]],
                                      mode: str) -> None:
    """One round of the controller at 1,000 nodes with half the fleet on the new driver (the staged one in its
    last stage); extra_info holds both rollouts' numbers from this run."""
    run = rollouts[mode]
    assert run.halfway is not None
    plan = benchmark(reconcile, run.halfway, run.settings, run.cluster.now)
    assert (plan.rollout is not None) == (mode == "staged")
    benchmark.extra_info.update(mode=mode, **numbers[mode],
                                other={name: n for name, n in numbers.items() if name != mode})
    with capsys.disabled():
        print(f"\n  {mode} round at 1,000 nodes, half done: {benchmark.stats.stats.mean * 1e3:.2f} ms "
              "(benchmark mean)")


def test_kwok(capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same comparison against a real API server and KWOK nodes (`BENCH_KWOK=1`, see the module)."""
    if os.environ.get("BENCH_KWOK") != "1":
        reason = ("the KWOK staged-rollout bench runs only with BENCH_KWOK=1 (and `make e2e-tools` built): "
                  "BENCH_KWOK=1 .venv-e2e/bin/python -m pytest tests/bench/test_staged_rollout_bench.py")
        with capsys.disabled():
            print(f"\n  skipped: {reason}")
        pytest.skip(reason)
    from tests.bench.staged_rollout_kwok import run_kwok_bench

    run_kwok_bench(tmp_path_factory, capsys)
