"""Watching: streamed events, 410 Expired, and `wait_for` riding out watch ends, compaction and deletion."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from gpu_operator.agents.kube import (
    PODS,
    Gone,
    KubeClient,
    ObjectDeleted,
    WaitTimeout,
    wait_for,
)
from gpu_operator.agents.kube.watch import parse_events
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(watch_timeout=0.3) as running:
        yield running


@pytest.fixture
def client(server: FakeApiServer) -> KubeClient:
    return server.client()


def pod(name: str, phase: str = "Pending") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": "v"}},
        "status": {"phase": phase},
    }


def set_phase(phase: str):
    return lambda obj: obj["status"].update(phase=phase)


def test_watch_streams_changes_after_a_version(server: FakeApiServer, client: KubeClient) -> None:
    start = server.add(pod("a"))["metadata"]["resourceVersion"]
    server.add({**pod("other"), "metadata": {"name": "other", "namespace": NS, "labels": {"app": "w"}}})
    server.update("pods", "a", NS, set_phase("Running"))
    server.remove("pods", "a", NS)
    events = list(client.watch(PODS, NS, label_selector="app=v", resource_version=start, timeout_seconds=1))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("MODIFIED", "a"), ("DELETED", "a")]
    assert events[0].object["status"]["phase"] == "Running"
    request = server.requests_to("GET", f"/api/v1/namespaces/{NS}/pods$")[-1]
    assert request.query["watch"] == "true" and request.query["timeoutSeconds"] == "1"


def test_watch_without_a_version_starts_with_the_current_objects(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.add(pod("b"))
    events = list(client.watch(PODS, NS, timeout_seconds=1))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_from_a_compacted_version_is_gone(server: FakeApiServer, client: KubeClient) -> None:
    start = server.add(pod("a"))["metadata"]["resourceVersion"]
    server.update("pods", "a", NS, set_phase("Running"))
    server.compact()
    with pytest.raises(Gone, match="too old resource version"):
        list(client.watch(PODS, NS, resource_version=start, timeout_seconds=1))


def test_error_events_and_bad_lines() -> None:
    error = b'{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"}}\n'
    with pytest.raises(Gone):
        list(parse_events([error]))
    from gpu_operator.agents.kube import ApiUnreachable

    with pytest.raises(ApiUnreachable, match="not JSON"):
        list(parse_events([b"<html>\n"]))


def test_wait_for_returns_when_the_condition_holds(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.later(0.05, lambda: server.update("pods", "a", NS, set_phase("Running")))
    server.later(0.1, lambda: server.update("pods", "a", NS, set_phase("Succeeded")))
    done = wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert done["status"]["phase"] == "Succeeded"
    watches = [r for r in server.requests_to("GET", f"/namespaces/{NS}/pods$") if r.query.get("watch")]
    assert watches[0].query["fieldSelector"] == "metadata.name=a"


def test_wait_for_an_object_that_already_holds_does_not_watch(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a", "Succeeded"))
    wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert not [r for r in server.requests if r.query.get("watch")]


def test_wait_for_times_out_with_the_last_state(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a", "Running"))
    ticks = itertools.count(0.0, 1.0)
    with pytest.raises(WaitTimeout, match="did not get ready within 3s") as timed_out:
        wait_for(client, PODS, "a", NS, lambda p: False, timeout=3, clock=lambda: next(ticks))
    assert timed_out.value.last["status"]["phase"] == "Running"


def test_wait_for_notices_deletion(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.later(0.05, lambda: server.remove("pods", "a", NS))
    with pytest.raises(ObjectDeleted, match="Pod a was deleted"):
        wait_for(client, PODS, "a", NS, lambda p: False, timeout=5)


def test_wait_for_survives_an_expired_version_and_a_broken_watch(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.fail("GET", f"/namespaces/{NS}/pods$", 410, reason="Expired")
    server.drop("GET", f"/namespaces/{NS}/pods$")

    def watches() -> list:
        return [r for r in server.requests_to("GET", f"/namespaces/{NS}/pods$") if r.query.get("watch")]

    def succeed_once_the_third_watch_runs() -> None:
        deadline = time.monotonic() + 5
        while len(watches()) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        server.update("pods", "a", NS, set_phase("Succeeded"))

    threading.Thread(target=succeed_once_the_third_watch_runs, daemon=True).start()
    done = wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert done["status"]["phase"] == "Succeeded"
    # watch 1 got 410 Expired (so the pod was read again), watch 2 was dropped and reopened as watch 3
    assert len(server.requests_to("GET", f"/namespaces/{NS}/pods/a$")) == 2
    assert len(watches()) == 3
