"""Watching through lightkube: streamed events, 410 Expired, a watch that ends at its time although lightkube
reopens the server's, and `wait_for` riding out watch ends, compaction, broken streams and deletion."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gpu_operator.agents.kube import PODS, Gone, KubeClient, ObjectDeleted, WaitTimeout, wait_for
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


def watches(server: FakeApiServer) -> list:
    return [r for r in server.requests_to("GET", f"/namespaces/{NS}/pods$") if r.query.get("watch")]


def test_watch_streams_changes_after_a_version(server: FakeApiServer, client: KubeClient) -> None:
    start = server.add(pod("a"))["metadata"]["resourceVersion"]
    server.add({**pod("other"), "metadata": {"name": "other", "namespace": NS, "labels": {"app": "w"}}})
    server.update("pods", "a", NS, set_phase("Running"))
    server.remove("pods", "a", NS)
    events = list(client.watch(PODS, NS, labels={"app": "v"}, resource_version=start, timeout_seconds=1))
    assert [(kind, obj["metadata"]["name"]) for kind, obj in events] == [("MODIFIED", "a"), ("DELETED", "a")]
    assert events[0][1]["status"]["phase"] == "Running" and type(events[0][1]) is dict
    first = watches(server)[0]
    assert first.query["timeoutSeconds"] == "1" and first.query["labelSelector"] == "app=v"


def test_a_watch_the_server_ends_early_is_reopened_until_its_time(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    started = time.monotonic()
    events = list(client.watch(PODS, NS, timeout_seconds=2))
    assert time.monotonic() - started >= 1.5  # reopened until its last half second (the end is not timed: the
    # machine may be busy; that it ends at all is what this test needs)
    assert [(kind, obj["metadata"]["name"]) for kind, obj in events] == [("ADDED", "a")]
    # the fake server ends each watch after 0.3 s; lightkube reopened it from the last version it saw
    assert len(watches(server)) >= 5 and watches(server)[1].query["resourceVersion"] == "1"


def test_a_watch_of_a_silent_object_still_ends(client: KubeClient) -> None:
    with FakeApiServer(watch_timeout=30) as slow:  # the server keeps the watch open for the 2 s asked
        started = time.monotonic()
        assert list(slow.client().watch(PODS, NS, resource_version="1", timeout_seconds=2)) == []
        assert time.monotonic() - started >= 1.5
        assert len(watches(slow)) == 1 and watches(slow)[0].query["timeoutSeconds"] == "2"  # asked once, to end


def test_watch_from_a_compacted_version_is_gone(server: FakeApiServer, client: KubeClient) -> None:
    start = server.add(pod("a"))["metadata"]["resourceVersion"]
    server.update("pods", "a", NS, set_phase("Running"))
    server.compact()
    with pytest.raises(Gone, match="too old resource version"):
        list(client.watch(PODS, NS, resource_version=start, timeout_seconds=1))


def test_wait_for_returns_when_the_condition_holds(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.later(0.05, lambda: server.update("pods", "a", NS, set_phase("Running")))
    server.later(0.1, lambda: server.update("pods", "a", NS, set_phase("Succeeded")))
    done = wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert done["status"]["phase"] == "Succeeded"
    assert watches(server)[0].query["fieldSelector"] == "metadata.name=a"


def test_wait_for_an_object_that_already_holds_does_not_watch(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a", "Succeeded"))
    wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert not watches(server)


def test_wait_for_times_out_on_time_with_the_last_state(client: KubeClient) -> None:
    with FakeApiServer(watch_timeout=30) as slow:  # nothing changes and the server keeps the watch open
        slow.add(pod("a", "Running"))
        with pytest.raises(WaitTimeout, match="did not get ready within 1.5s") as timed_out:
            wait_for(slow.client(), PODS, "a", NS, lambda p: False, timeout=1.5)
        # the watch asked the server to end it at ceil(1.5 s), and ours ended it before that, once
        watched = [r for r in slow.requests if r.query.get("watch") == "true"]
        assert [r.query.get("timeoutSeconds") for r in watched] == ["2"]
    assert timed_out.value.last["status"]["phase"] == "Running"


def test_wait_for_notices_deletion(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))

    def delete_once_watched() -> None:  # not before the first read: a loaded machine may be slow to make it
        deadline = time.monotonic() + 5
        while not watches(server) and time.monotonic() < deadline:
            time.sleep(0.005)
        server.remove("pods", "a", NS)

    threading.Thread(target=delete_once_watched, daemon=True).start()
    with pytest.raises(ObjectDeleted, match="Pod a was deleted"):
        wait_for(client, PODS, "a", NS, lambda p: False, timeout=5)


def test_wait_for_survives_an_expired_version_and_a_broken_watch(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a"))
    server.fail("GET", f"/namespaces/{NS}/pods$", 410, reason="Expired")
    server.drop("GET", f"/namespaces/{NS}/pods$")

    def succeed_once_the_third_watch_runs() -> None:
        deadline = time.monotonic() + 5
        while len(watches(server)) < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        server.update("pods", "a", NS, set_phase("Succeeded"))

    threading.Thread(target=succeed_once_the_third_watch_runs, daemon=True).start()
    done = wait_for(client, PODS, "a", NS, lambda p: p["status"]["phase"] == "Succeeded", timeout=5)
    assert done["status"]["phase"] == "Succeeded"
    # watch 1 got 410 Expired, so the pod was read again; watch 2 was dropped before any answer and the transport
    # sent it again (a GET has nothing to lose), so no read was needed: three watches, two reads
    assert len(server.requests_to("GET", f"/namespaces/{NS}/pods/a$")) == 2
    assert len(watches(server)) == 3
