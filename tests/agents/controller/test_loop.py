"""The controller's loop against the fake API server, through the agents' real client: a write that still fails
fails only its own action, the fence ends a round before anything more is sent, SIGTERM abandons what is left,
a slow API server delays the start instead of killing it, and no expected API error comes with a traceback."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import httpx2
import pytest
from lightkube import Client

from gpu_operator.agents.controller.loop import ControllerLoop
from gpu_operator.agents.controller.metrics import ControllerMetrics
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.kube import NotLeader, RetryPolicy, connect
from gpu_operator.labels import LabellingPolicy
from gpu_operator.upgrade import UpgradePolicy
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
THROTTLED = "Too many requests, please try again later.\n"
NODES = ("gpu-0", "gpu-1", "gpu-2")


def _node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"}}}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        for name in NODES:
            running.add(_node(name))
        yield running


def _loop(server: FakeApiServer, guard: Callable[[httpx2.Request], None] | None = None,
          stop: threading.Event | None = None) -> tuple[ControllerLoop, ControllerMetrics]:
    client: Client = connect(server.client().config, retry=RetryPolicy(attempts=3, initial_delay=0.001, jitter=0.0),
                             guard=guard, interrupt=stop)
    metrics = ControllerMetrics()
    settings = ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), resync_seconds=60)
    loop = ControllerLoop(client, settings, metrics, stop=stop)
    assert loop.start()
    return loop, metrics


def _labelled(server: FakeApiServer) -> list[str]:
    return sorted(name for name in NODES
                  if server.get("nodes", name)["metadata"]["labels"].get("nvidia.com/gpu.present") == "true")


def test_a_write_that_still_fails_fails_only_its_own_action(server: FakeApiServer,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    loop, metrics = _loop(server)
    server.fail("PATCH", "/api/v1/nodes/gpu-1$", 429, times=3, text=THROTTLED)  # every try of the round
    server.fail("POST", "/events$", 500, times=100)
    with caplog.at_level(logging.WARNING):
        loop.round()
    assert _labelled(server) == ["gpu-0", "gpu-2"]
    assert metrics.failed_actions.labels("node-patch")._value.get() == 1
    failures = [r for r in caplog.records if "node-patch on node gpu-1 failed" in r.getMessage()]
    assert failures and "Too many requests" in failures[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "an expected API error was logged with a traceback"
    loop.round()  # the next round plans it again from what the API says
    assert _labelled(server) == list(NODES)
    loop.close()


def test_the_fence_ends_the_round_before_anything_more_is_sent(server: FakeApiServer) -> None:
    leading = [True]

    def guard(request: httpx2.Request) -> None:
        if not leading[0]:
            raise NotLeader("the Lease was not renewed in time")
        leading[0] = False  # the first write goes; the Lease is then late

    loop, _ = _loop(server, guard)
    with pytest.raises(NotLeader):
        loop.round()
    assert len([r for r in server.requests if r.method != "GET"]) == 1
    loop.close()


def test_stop_abandons_the_rest_of_the_round(server: FakeApiServer) -> None:
    stop = threading.Event()
    loop, _ = _loop(server, guard=lambda request: stop.set(), stop=stop)  # SIGTERM arrives during the first write
    loop.round()
    assert len([r for r in server.requests if r.method != "GET"]) == 1
    loop.close()


def test_run_plans_nothing_while_not_leading_and_returns_on_stop(server: FakeApiServer) -> None:
    stop = threading.Event()
    loop, _ = _loop(server, stop=stop)
    leading = [False]
    runner = threading.Thread(target=loop.run, args=(lambda: leading[0],), daemon=True)
    runner.start()
    loop.wake.set()
    runner.join(timeout=0.6)
    assert _labelled(server) == []  # fenced: no round ran
    leading[0] = True
    loop.wake.set()
    deadline = threading.Event()
    for _ in range(100):
        if _labelled(server) == list(NODES):
            break
        deadline.wait(0.05)
    assert _labelled(server) == list(NODES)
    stop.set()
    loop.wake.set()
    runner.join(timeout=5)
    assert not runner.is_alive()
    loop.close()


def test_the_start_waits_for_an_api_server_that_refuses_lists(server: FakeApiServer) -> None:
    """A watch that has not listed after a while is not an error: the informer keeps trying (the old loop raised
    TimeoutError after 60 s and the controller exited)."""
    server.fail("GET", "/api/v1/nodes$", 503, times=6)  # two lists of three tries each
    loop, _ = _loop(server)
    assert len(server.requests_to("GET", "/api/v1/nodes$")) >= 7
    loop.close()


def test_a_node_at_a_pod_step_is_planned_from_what_the_actuator_remembers(server: FakeApiServer) -> None:
    """The state the loop builds carries the actuator's memory under the right names (a node at pod deletion
    with a GPU pod: the eviction's clock and what it waits for reach the planner)."""
    server.update("nodes", "gpu-0", None, lambda node: node["metadata"]["labels"].update(
        {"nvidia.com/gpu-driver-upgrade-state": "pod-deletion-required"}))
    server.add({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "driver-gpu-0", "namespace": NS, "labels": {"app": "nvidia-driver-daemonset"}},
        "spec": {"nodeName": "gpu-0", "containers": [{"name": "driver", "image": "driver"}]}})
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]
    server.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "default",
                                                                 "ownerReferences": owner},
                "spec": {"nodeName": "gpu-0", "containers": [{"name": "c", "image": "c", "resources": {
                    "limits": {"nvidia.com/gpu": "1"}}}]}})
    loop, metrics = _loop(server)
    loop.round()
    state = loop.state()
    assert set(state.eviction_blocked_since) == {"gpu-0"} and isinstance(state.eviction_waiting_for, dict)
    assert state.eviction_waiting_for["gpu-0"] == "default/train still terminating"
    assert server.get("pods", "train", "default")["metadata"]["deletionTimestamp"]
    assert state.gpu_claim_nodes == frozenset()
    loop.close()


def test_a_fault_condition_quarantines_its_node_with_an_event_metrics_and_status(server: FakeApiServer) -> None:
    """The controller's round carries the remediation's plan out: the fallen-off-the-bus node is cordoned and
    labelled quarantined (marked as cordoned by us), with an Event of the remediation's own, the quarantine metric,
    and the node's step in the status ConfigMap for `diag`."""
    from gpu_operator.remediation import policy_from_document

    server.update("nodes", "gpu-1", None, lambda node: (
        node["metadata"]["labels"].update({"nvidia.com/gpu.present": "true"}),
        node.setdefault("status", {}).update({"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "GPUFallenOffBus", "status": "True", "reason": "XID79", "lastTransitionTime": "2026-11-28T00:00:00Z",
             "message": 'GPU-1 (0000:17:00.0): XID 79 "GPU has fallen off the bus": RESTART_BM'}]})))
    client = connect(server.client().config, retry=RetryPolicy(attempts=3, initial_delay=0.001, jitter=0.0))
    settings = ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), resync_seconds=60,
                                  remediation=policy_from_document({"mode": "enforce"}))
    metrics = ControllerMetrics()
    loop = ControllerLoop(client, settings, metrics)
    assert loop.start()
    loop.round()
    node = server.get("nodes", "gpu-1")
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"]["nvidia.com/gpu-remediation.state"] == "quarantined"
    assert node["metadata"]["annotations"]["nvidia.com/gpu-remediation.cordoned"] == "true"
    events = server.objects("events", "default")
    assert any(e["source"]["component"] == "gpu-operator-remediation" and e["involvedObject"]["name"] == "gpu-1"
               for e in events)
    assert metrics.quarantined.labels("", "fallen-off-bus")._value.get() == 1
    status = server.get("configmaps", "gpu-operator-status", NS)["data"]
    assert "gpu-1" in status["remediation"] and "fallen-off-bus" in status["remediation"]
    assert "gpu-0" not in status["remediation"]
    loop.close()


def test_a_new_leader_carries_the_staged_rollout_on_from_the_status_and_tells_its_halt(
        server: FakeApiServer) -> None:
    """The gate's memory is read back from the status ConfigMap (a halt the last leader recorded holds), the halt
    is an Event on that ConfigMap in the operator's namespace, and the status keeps publishing the decision."""
    import json

    from gpu_operator.upgrade.stages import RolloutMemory, RolloutPolicy, RolloutStage

    halt = "stage canary: GPU faults during its soak on gpu-0 (reset)"
    memory = RolloutMemory("", frozenset({"canary"}), {"canary": 1.0}, halt)
    server.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-operator-status", "namespace": NS},
                "data": {"rollout": json.dumps({"memory": memory.to_dict()})}})
    client = connect(server.client().config, retry=RetryPolicy(attempts=3, initial_delay=0.001, jitter=0.0))
    policy = RolloutPolicy((RolloutStage("canary", ("canary",), 600), RolloutStage("rest", ("*",))))
    settings = ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), resync_seconds=60, rollout=policy)
    loop = ControllerLoop(client, settings, ControllerMetrics())
    assert loop.start()
    plan = loop.round()
    assert plan.rollout is not None and plan.rollout.halted == halt
    [event] = [e for e in server.objects("events", NS) if e["reason"] == "GPUDriverRolloutHalted"]
    assert event["involvedObject"] == {"kind": "ConfigMap", "name": "gpu-operator-status", "namespace": NS,
                                       "apiVersion": "v1"}
    assert event["type"] == "Warning" and halt in event["message"]
    published = json.loads(server.get("configmaps", "gpu-operator-status", NS)["data"]["rollout"])
    assert published["halted"] == halt and published["memory"]["halted"] == halt
    loop.round()
    assert len([e for e in server.objects("events", NS) if e["reason"] == "GPUDriverRolloutHalted"]) == 1
    loop.close()
    successor = ControllerLoop(client, settings, ControllerMetrics())  # a new leader: the halt was told already
    assert successor.start()
    assert successor.round().rollout.halted == halt  # type: ignore[union-attr]
    assert len([e for e in server.objects("events", NS) if e["reason"] == "GPUDriverRolloutHalted"]) == 1
    successor.close()


def test_alerts_that_cannot_be_read_leave_the_round_running(server: FakeApiServer) -> None:
    from gpu_operator.upgrade.stages import RolloutPolicy, RolloutStage

    client = connect(server.client().config, retry=RetryPolicy(attempts=3, initial_delay=0.001, jitter=0.0))
    policy = RolloutPolicy((RolloutStage("canary", ("canary",), 600),), ("GPUXidCritical",))
    # port 9 (discard) on loopback: nothing answers there
    settings = ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), resync_seconds=60, rollout=policy,
                                  prometheus_url="http://127.0.0.1:9")
    loop = ControllerLoop(client, settings, ControllerMetrics())
    assert loop.start()
    assert loop.alerts is not None and loop.alerts.firing() is None
    plan = loop.round()
    assert plan.rollout is not None and not plan.rollout.halted
    loop.close()


def test_a_status_held_back_by_its_interval_brings_a_round_back_to_write_it(server: FakeApiServer) -> None:
    """The status ConfigMap is written at most every 5 s; a newer status held back asks for a round when it may be
    written, so what `upgrade status` and a new leader read is never left stale until some unrelated event."""
    loop, _ = _loop(server)
    loop.round()  # labels the nodes; the status is written from what the round read (no GPU node yet)
    before = server.get("configmaps", "gpu-operator-status", NS)["data"]["nodes"]
    plan = loop.round()  # the nodes are GPU nodes now: a new status, within the interval
    assert 0 < plan.requeue_after <= 5.0
    assert server.get("configmaps", "gpu-operator-status", NS)["data"]["nodes"] == before
    loop.close()


@pytest.mark.parametrize("record", ["not json", "[]", '{"memory": "garbled"}'])
def test_an_unreadable_published_record_starts_the_gate_afresh(server: FakeApiServer, record: str) -> None:
    from gpu_operator.upgrade.stages import RolloutPolicy, RolloutStage

    server.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-operator-status", "namespace": NS},
                "data": {"rollout": record}})
    client = connect(server.client().config, retry=RetryPolicy(attempts=3, initial_delay=0.001, jitter=0.0))
    policy = RolloutPolicy((RolloutStage("canary", ("canary",), 600),))
    loop = ControllerLoop(client, ControllerSettings(NS, LabellingPolicy(), UpgradePolicy(), rollout=policy),
                          ControllerMetrics())
    assert loop.start()
    plan = loop.round()
    assert plan.rollout is not None and not plan.rollout.halted and plan.rollout.memory.started == frozenset()
    loop.close()
