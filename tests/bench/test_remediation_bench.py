"""GPU fault remediation, timed: detection to cordon on a node, 100 faults at once, and the controller's round at
1,000 nodes with remediation, labelling and upgrades all on.

1. NVML event to `spec.unschedulable`: health monitors (simulated 8-GPU nodes, their threads as in production)
   and the operator controller's loop (enforce mode, its informers and writes through the agents' client) run
   against the fake API server; one XID 79 per node, timed from the injection until the node reads cordoned.
   Split into the agent's share (to the condition write) and the controller's (to the cordon). Baseline: a bare
   node patch by the same client, in the same run.
2. 100 faults on 100 nodes at once: every condition written together (as 100 monitors would), timed until all
   100 nodes are cordoned. Baseline: the 100 cordon patches sent one after the other by one client.
3. The controller's decision at 1,000 nodes (a tenth faulty, a tenth in a driver upgrade): the remediation
   planner plus the labelling and upgrade reconcile per round, and the memory its views take; baseline: the
   reconcile alone (remediation off), in the same run.

Nothing here asserts a time: the numbers are printed and kept in the benchmark's extra_info.
"""

from __future__ import annotations

import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from gpu_operator.agents.controller.loop import ControllerLoop
from gpu_operator.agents.controller.metrics import ControllerMetrics
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.kube import NODES, PatchType, RetryPolicy, connect
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from gpu_operator.labels import LabellingPolicy
from gpu_operator.remediation import NodeCondition, NodeView, plan, policy_from_document
from gpu_operator.upgrade import UpgradePolicy
from tests.agents.health_monitor.conftest import PROFILE, SETTINGS, Harness, Running
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
ENFORCE = {"mode": "enforce", "breaker": {"maxNodes": 10000, "maxPercent": 100}, "maxConcurrent": 1000}
PCI_LABEL = {"feature.node.kubernetes.io/pci-10de.present": "true"}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


#: A whole `status.nodeInfo` (every field is required in the API's schema, and lightkube's models read it so).
NODE_INFO = {"architecture": "amd64", "bootID": "boot-1", "containerRuntimeVersion": "containerd://2.0.0",
             "kernelVersion": "6.8.0", "kubeProxyVersion": "", "kubeletVersion": "v1.34.0", "machineID": "m",
             "operatingSystem": "linux", "osImage": "Ubuntu 24.04", "systemUUID": "s"}


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(PCI_LABEL)},
            "status": {"nodeInfo": dict(NODE_INFO), "conditions": [{"type": "Ready", "status": "True"}]}}


class _Controller:
    """The controller's loop in enforce mode on a thread, as `gpu-operator-agent operator` runs it."""

    def __init__(self, server: FakeApiServer) -> None:
        client = connect(server.client().config, retry=RetryPolicy(initial_delay=0.01))
        settings = ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), resync_seconds=300,
                                      remediation=policy_from_document(ENFORCE))
        self.loop = ControllerLoop(client, settings, ControllerMetrics())
        self._thread = threading.Thread(target=self.loop.run, daemon=True)

    def __enter__(self) -> _Controller:
        assert self.loop.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.stop.set()
        self.loop.wake.set()
        self._thread.join(timeout=10)
        self.loop.close()


def _wait(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def _cordoned(server: FakeApiServer, name: str) -> bool:
    return bool((server.get("nodes", name) or {}).get("spec", {}).get("unschedulable"))


def _condition_true(server: FakeApiServer, name: str) -> bool:
    return any(c.get("type") == "GPUFallenOffBus" and c.get("status") == "True"
               for c in (server.get("nodes", name) or {}).get("status", {}).get("conditions", ()))


NODE_COUNT = 12


def _detection_to_cordon(server: FakeApiServer) -> tuple[list[float], list[float], list[float]]:
    totals, agent, controller = [], [], []
    libraries = {f"node-{i:02d}": SimulatedLibrary(PROFILE) for i in range(NODE_COUNT)}
    settings = replace(SETTINGS, condition_qps=1000.0, condition_burst=1000, batch_seconds=0.02,
                       health_interval=3600.0)
    monitors = [Running(Harness(server, library, replace(settings, node=name)).monitor())
                for name, library in libraries.items()]
    for running in monitors:
        running.__enter__()
    try:
        with _Controller(server):
            for name, library in libraries.items():
                _wait(lambda name=name: any(c.get("type") == "GPUFallenOffBus" for c in
                                            server.get("nodes", name).get("status", {}).get("conditions", ())),
                      f"{name}'s monitor started")
                start = time.perf_counter()
                library.inject("xid 79 on GPU 3")
                _wait(lambda name=name: _condition_true(server, name), f"{name}'s condition")
                written = time.perf_counter()
                _wait(lambda name=name: _cordoned(server, name), f"{name} cordoned")
                done = time.perf_counter()
                totals.append(done - start)
                agent.append(written - start)
                controller.append(done - written)
    finally:
        for running in monitors:
            running.__exit__(None, None, None)
    return totals, agent, controller


def test_nvml_event_to_cordon(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        for index in range(NODE_COUNT):
            server.add(_node(f"node-{index:02d}"))
        totals, agent, controller = benchmark.pedantic(_detection_to_cordon, args=(server,), rounds=1, iterations=1)
        client = server.client()
        bare = []
        for index in range(NODE_COUNT):
            start = time.perf_counter()
            client.patch(NODES, f"node-{index:02d}", {"metadata": {"labels": {"bench": str(index)}}},
                         patch_type=PatchType.MERGE)
            bare.append(time.perf_counter() - start)
    numbers = {
        "event_to_cordon_p50_s": statistics.median(totals), "event_to_cordon_p99_s": _percentile(totals, 0.99),
        "event_to_cordon_max_s": max(totals), "agent_share_p50_s": statistics.median(agent),
        "controller_share_p50_s": statistics.median(controller), "bare_patch_p50_s": statistics.median(bare),
    }
    benchmark.extra_info.update(numbers, nodes=NODE_COUNT)
    with capsys.disabled():
        print("\n  " + ", ".join(f"{k}={v:.3f}" for k, v in numbers.items()))
    assert len(totals) == NODE_COUNT


def _hundred_faults(server: FakeApiServer, names: list[str]) -> float:
    client = server.client()
    with _Controller(server):
        _wait(lambda: all((server.get("nodes", n)["metadata"].get("labels") or {}).get("nvidia.com/gpu.present")
                          == "true" for n in names), "the nodes labelled")
        stamp = "2026-11-28T00:00:00Z"
        start = time.perf_counter()
        writers = [threading.Thread(target=lambda name=name: client.patch(NODES, name, {"status": {"conditions": [
            {"type": "GPUFallenOffBus", "status": "True", "reason": "XID79", "lastTransitionTime": stamp,
             "message": 'GPU-1 (0000:17:00.0): XID 79 "GPU has fallen off the bus": RESTART_BM'}]}},
            patch_type=PatchType.STRATEGIC, status=True)) for name in names]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        _wait(lambda: all(_cordoned(server, n) for n in names), "100 nodes cordoned", timeout=120)
        return time.perf_counter() - start


def test_hundred_faults_on_a_hundred_nodes(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    names = [f"node-{i:03d}" for i in range(100)]
    with FakeApiServer() as server:
        for name in names:
            server.add(_node(name))
        seconds = benchmark.pedantic(_hundred_faults, args=(server, names), rounds=1, iterations=1)
    with FakeApiServer() as server:
        for name in names:
            server.add(_node(name))
        client = server.client()
        start = time.perf_counter()
        for name in names:
            client.patch(NODES, name, {"spec": {"unschedulable": True}}, patch_type=PatchType.MERGE)
        bare = time.perf_counter() - start
    benchmark.extra_info.update(all_cordoned_s=seconds, bare_sequential_cordons_s=bare)
    with capsys.disabled():
        print(f"\n  100 faults at once: all 100 nodes cordoned {seconds:.2f} s after the first condition write; "
              f"baseline, 100 cordon patches one after the other: {bare:.2f} s")


def _views(count: int) -> dict[str, NodeView]:
    views = {}
    for index in range(count):
        name = f"gpu-{index:05d}"
        labels = {"nvidia.com/gpu.present": "true", "kubernetes.azure.com/agentpool": f"pool-{index % 4}"}
        if index % 10 == 5:
            labels["nvidia.com/gpu-driver-upgrade-state"] = "pod-deletion-required"
        conditions = [NodeCondition("Ready", "True")]
        if index % 10 == 0:
            conditions.append(NodeCondition("GPUFallenOffBus", "True", "XID79",
                                            'GPU-1 (0000:17:00.0): XID 79 "GPU has fallen off the bus"', 1000.0))
        views[name] = NodeView(name, labels["kubernetes.azure.com/agentpool"], labels, {}, tuple(conditions),
                               boot_id="boot-1")
    return views


def test_controller_decision_at_1000_nodes(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.bench.test_upgrade_bench import _controller_cluster
    from gpu_operator.agents.controller.reconcile import reconcile

    settings = ControllerSettings("ns", LabellingPolicy(), UpgradePolicy(max_parallel_upgrades=50,
                                                                         max_unavailable="100%"))
    cluster = _controller_cluster(1000)
    for _ in range(3):  # labelled, done at the old driver, then upgrade-required
        cluster.carry_out(reconcile(cluster.state(), settings, cluster.now))
        cluster.tick()
    state = cluster.state()
    policy = policy_from_document(ENFORCE)
    tracemalloc.start()
    views = _views(1000)
    views_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()

    def both() -> None:
        plan(views, policy, 2000.0)
        reconcile(state, settings, cluster.now)

    benchmark(both)
    with_remediation = _median_seconds(both)
    baseline = _median_seconds(lambda: reconcile(state, settings, cluster.now))
    both_peak = _peak_bytes(both)
    reconcile_peak = _peak_bytes(lambda: reconcile(state, settings, cluster.now))
    benchmark.extra_info.update(round_ms=with_remediation * 1e3, reconcile_only_ms=baseline * 1e3,
                                views_mib=views_bytes / 2**20, round_peak_mib=both_peak / 2**20,
                                reconcile_peak_mib=reconcile_peak / 2**20)
    with capsys.disabled():
        print(f"\n  1,000 nodes (100 faulty, 100 in an upgrade), median of 20 rounds: remediation + labelling + "
              f"upgrade {with_remediation * 1e3:.1f} ms CPU per round, peak {both_peak / 2**20:.2f} MiB allocated "
              f"in the round (+ the views, {views_bytes / 2**20:.2f} MiB, kept); baseline, labelling + upgrade "
              f"alone {baseline * 1e3:.1f} ms, peak {reconcile_peak / 2**20:.2f} MiB")


def _median_seconds(work: Callable[[], object], rounds: int = 20) -> float:
    """The median CPU time of `work` (process time: what the controller's round costs, not the machine's load)."""
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        work()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def _peak_bytes(work: Callable[[], object]) -> int:
    """The most memory `work` holds at once (tracemalloc's peak, above what was allocated before it)."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
