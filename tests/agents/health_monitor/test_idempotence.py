"""Level-triggered and idempotent: a storm of identical faults is one condition write and one Event, and writes
go through token buckets.

The aggregation is client-go's EventCorrelator's (k8s.io/client-go tools/record events_cache.go
`eventLogger.eventObserve`: the same type, reason and message patch `count` and `lastTimestamp` of the Event
already written); the buckets are its flowcontrol token buckets, the batching NPD's condition manager sync loop
(pkg/exporters/k8sexporter/condition/manager.go: updates collected and synced at most once per period).
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.health_monitor.ratelimit import TokenBucket
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.health_monitor.conftest import Harness, Running, conditions, status_writes, wait_until
from tests.agents.kube.fake_apiserver import FakeApiServer

XIDS = 10_000


def _events(server: FakeApiServer, reason: str) -> list[dict]:
    return [e for e in server.objects("events", "default") if e["reason"] == reason]


def test_ten_thousand_identical_xids_make_one_condition_write_and_one_event(
        harness: Harness, server: FakeApiServer, library: SimulatedLibrary) -> None:
    with Running(harness.monitor(event_interval=0.05)) as monitor:
        writes = len(status_writes(server))
        library.inject(*["xid 79 on GPU 3"] * XIDS)
        wait_until(lambda: monitor.events.next_due() is None and sum(e["count"] for e in _events(server, "XID79"))
                   == XIDS, "every XID counted")
        assert conditions(server)["GPUFallenOffBus"]["status"] == "True"
        assert len(status_writes(server)) == writes + 1
        [event] = _events(server, "XID79")
        assert event["count"] == XIDS
        assert (event["type"], event["involvedObject"]["kind"], event["involvedObject"]["name"]) == (
            "Warning", "Node", "gpu-node-1")
        assert event["source"] == {"component": "gpu-health-monitor", "host": "gpu-node-1"}
        creates = server.requests_to("POST", "/api/v1/namespaces/default/events$")
        assert len([c for c in creates if c.body["reason"] == "XID79"]) == 1


def test_condition_writes_wait_for_a_token_and_fold_into_one(harness: Harness, server: FakeApiServer,
                                                             library: SimulatedLibrary) -> None:
    """With the bucket empty, three new faults wait; the token that comes back writes them in one patch."""
    monitor = harness.monitor(condition_qps=0.001, condition_burst=1)
    monitor.start_over()
    now = [100.0]
    monitor.publisher._bucket = TokenBucket(1.0, 1, clock=lambda: now[0])
    library.inject("dbe on GPU 0")
    monitor.health_pass()
    assert monitor.publisher.sync()
    writes = len(status_writes(server))
    for line in ("row-remap-failed on GPU 1", "nvlink-down 3 on GPU 2", "lost on GPU 4"):
        library.inject(line)
        monitor.health_pass()
        assert not monitor.publisher.sync()
    assert len(status_writes(server)) == writes
    now[0] += 1.0
    assert monitor.publisher.sync()
    [patch] = status_writes(server)[writes:]
    assert {c["type"] for c in patch["status"]["conditions"]} == {
        "GPUHardwareFailure", "GPURebootRequired", "GPUFallenOffBus"}


def test_token_bucket_burst_then_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.wait_time() == pytest.approx(0.5)
    now[0] += 0.5
    assert bucket.take() and not bucket.take()
    now[0] += 100.0
    assert sum(bucket.take() for _ in range(10)) == 3


def test_a_bucket_needs_a_rate_and_a_burst() -> None:
    with pytest.raises(ValueError, match="positive rate"):
        TokenBucket(0.0, 1)
    with pytest.raises(ValueError, match="burst of at least 1"):
        TokenBucket(1.0, 0)


def test_events_wait_for_their_bucket_and_their_interval(harness: Harness, server: FakeApiServer) -> None:
    """A repeat is written at most once an interval; with no token, nothing is written until one comes back."""
    now = [0.0]
    monitor = harness.monitor()
    events = monitor.events
    events._bucket = TokenBucket(1.0, 2, clock=lambda: now[0])
    events._monotonic = lambda: now[0]
    events.record("Warning", "XID48", "GPU-x: a")
    events.record("Warning", "XID48", "GPU-x: b")
    events.record("Warning", "XID48", "GPU-x: c")
    events.flush()
    assert len(server.objects("events", "default")) == 2
    assert events.next_due() == pytest.approx(1.0)
    now[0] += 1.0
    events.flush()
    assert len(server.objects("events", "default")) == 3
    events.record("Warning", "XID48", "GPU-x: a")
    now[0] += 5.0
    events.flush()
    assert [e["count"] for e in server.objects("events", "default") if e["message"] == "GPU-x: a"] == [1]
    now[0] += 5.0
    events.flush()
    assert [e["count"] for e in server.objects("events", "default") if e["message"] == "GPU-x: a"] == [2]


def test_an_expired_event_is_created_again(harness: Harness, server: FakeApiServer) -> None:
    now = [0.0]
    events = harness.monitor().events
    events._monotonic = lambda: now[0]
    events.record("Warning", "XID79", "GPU-x: gone")
    events.flush()
    [first] = server.objects("events", "default")
    server.remove("events", first["metadata"]["name"], "default")
    events.record("Warning", "XID79", "GPU-x: gone")
    now[0] += 60.0
    events.flush()
    [second] = server.objects("events", "default")
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert second["count"] == 2



def test_an_event_alone_wakes_the_publisher(harness: Harness, server: FakeApiServer) -> None:
    """An application XID changes no condition; recording its Event wakes the publisher, which writes what is due,
    so the Event does not wait for the next condition write or health pass."""
    monitor = harness.monitor()
    woken: list[bool] = []
    monitor.events.on_record = lambda: woken.append(True)
    monitor.events.record("Normal", "XID13", "GPU-x: an application fault")
    assert woken == [True]
    fresh = harness.monitor()
    assert fresh.events.on_record == fresh.publisher.wake
