"""The client against the fake API server: every verb, selectors, pagination, errors and retries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.kube import (
    DAEMON_SETS,
    NODES,
    PODS,
    AlreadyExists,
    ApiUnreachable,
    ClusterConfig,
    Conflict,
    KubeClient,
    NotFound,
    PatchType,
    RetryPolicy,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from gpu_operator.agents.kube.transport import HttpTransport
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(token="secret") as running:
        yield running


@pytest.fixture
def client(server: FakeApiServer) -> Iterator[KubeClient]:
    opened = server.client()
    yield opened
    opened.close()


def pod(name: str, node: str = "n1", **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"nodeName": node},
    }


def test_create_get_and_generate_name(server: FakeApiServer, client: KubeClient) -> None:
    created = client.create(
        PODS, {"metadata": {"generateName": "nvidia-cuda-validator-"}, "spec": {"nodeName": "n1"}}, NS
    )
    name = created["metadata"]["name"]
    assert name.startswith("nvidia-cuda-validator-") and len(name) == len("nvidia-cuda-validator-") + 5
    assert client.get(PODS, name, NS)["metadata"]["uid"] == created["metadata"]["uid"]
    request = server.requests_to("POST", f"/api/v1/namespaces/{NS}/pods$")[0]
    assert request.headers["authorization"] == "Bearer secret"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == "gpu-operator-agent"


def test_errors_carry_the_api_reason(client: KubeClient) -> None:
    client.create(PODS, pod("a"), NS)
    with pytest.raises(AlreadyExists, match='pods "a" already exists'):
        client.create(PODS, pod("a"), NS)
    with pytest.raises(NotFound) as missing:
        client.get(PODS, "b", NS)
    assert (missing.value.status, missing.value.reason) == (404, "NotFound")
    with pytest.raises(NotFound):
        client.get(DAEMON_SETS, "nvidia-operator-validator", NS)


def test_namespaced_objects_need_a_namespace(client: KubeClient) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        client.get(PODS, "a")
    with pytest.raises(ValueError, match="namespaced"):
        client.create(PODS, pod("a"))
    with pytest.raises(ValueError, match="cluster-scoped"):
        client.get(NODES, "n1", NS)


def test_list_with_selectors_and_all_namespaces(server: FakeApiServer, client: KubeClient) -> None:
    server.add(pod("a", "n1", app="nvidia-cuda-validator"))
    server.add(pod("b", "n2", app="nvidia-cuda-validator"))
    server.add(pod("c", "n1", app="other"))
    server.add(
        {
            **pod("d", "n1", app="nvidia-cuda-validator"),
            "metadata": {"name": "d", "namespace": "elsewhere", "labels": {"app": "nvidia-cuda-validator"}},
        }
    )
    found = client.list(PODS, NS, label_selector="app=nvidia-cuda-validator", field_selector="spec.nodeName=n1")
    assert [p["metadata"]["name"] for p in found.items] == ["a"]
    assert found.resource_version is not None and int(found.resource_version) >= 4
    everywhere = client.list(PODS, label_selector="app in (nvidia-cuda-validator)")
    assert sorted(p["metadata"]["name"] for p in everywhere.items) == ["a", "b", "d"]
    assert [
        p["metadata"]["name"] for p in client.list(PODS, NS, label_selector="app!=nvidia-cuda-validator").items
    ] == ["c"]


def test_list_follows_continue_tokens(server: FakeApiServer, client: KubeClient) -> None:
    for index in range(7):
        server.add(pod(f"p{index}"))
    found = client.list(PODS, NS, page_size=3)
    assert [p["metadata"]["name"] for p in found.items] == [f"p{i}" for i in range(7)]
    pages = server.requests_to("GET", f"/api/v1/namespaces/{NS}/pods$")
    assert [r.query.get("continue") for r in pages] == [None, "3", "6"]
    assert {r.query["limit"] for r in pages} == {"3"}


def test_replace_detects_stale_versions(client: KubeClient) -> None:
    created = client.create(PODS, pod("a"), NS)
    changed = {**created, "metadata": {**created["metadata"], "labels": {"x": "1"}}}
    replaced = client.replace(PODS, changed, NS)
    assert replaced["metadata"]["labels"] == {"x": "1"}
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(Conflict, match="the object has been modified"):
        client.replace(PODS, changed, NS)


def test_patch_merge_json_and_status(server: FakeApiServer, client: KubeClient) -> None:
    client.create(PODS, pod("a", app="x"), NS)
    merged = client.patch(PODS, "a", {"metadata": {"labels": {"app": None, "tier": "gpu"}}}, NS)
    assert merged["metadata"]["labels"] == {"tier": "gpu"}
    patched = client.patch(
        PODS, "a", [{"op": "add", "path": "/metadata/labels/b", "value": "2"}], NS, patch_type=PatchType.JSON
    )
    assert patched["metadata"]["labels"] == {"tier": "gpu", "b": "2"}
    client.patch(
        PODS, "a", {"status": {"phase": "Running"}, "metadata": {"labels": {"ignored": "y"}}}, NS, subresource="status"
    )
    stored = server.get("pods", "a", NS)
    assert (
        stored is not None and stored["status"]["phase"] == "Running" and "ignored" not in stored["metadata"]["labels"]
    )
    types = [r.headers["content-type"] for r in server.requests if r.method == "PATCH"]
    assert types == ["application/merge-patch+json", "application/json-patch+json", "application/merge-patch+json"]


def test_delete_sends_delete_options(server: FakeApiServer, client: KubeClient) -> None:
    client.create(PODS, pod("a"), NS)
    client.delete(PODS, "a", NS, grace_period_seconds=0, propagation_policy="Background")
    assert server.get("pods", "a", NS) is None
    request = server.requests_to("DELETE", "/pods/a$")[0]
    assert request.body == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Background",
    }
    with pytest.raises(NotFound):
        client.delete(PODS, "a", NS)


def test_wrong_token_is_unauthorized(server: FakeApiServer) -> None:
    with pytest.raises(Unauthorized):
        server.client(token="wrong").get(NODES, "n1")


def test_throttling_and_server_errors_are_retried_with_backoff(server: FakeApiServer) -> None:
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    waits: list[float] = []
    policy = RetryPolicy(attempts=5, initial_delay=0.5, multiplier=2, max_delay=8, jitter=0.0, max_retry_after=30)
    transport = HttpTransport(server.client().config, retry=policy, sleep=waits.append)
    server.fail("GET", "/api/v1/nodes/n1$", 429, times=1, retry_after="3")
    server.fail("GET", "/api/v1/nodes/n1$", 503, times=2)
    assert b'"n1"' in transport.request("GET", "/api/v1/nodes/n1")
    assert waits == [3.0, 1.0, 2.0]
    assert len(server.requests_to("GET", "/api/v1/nodes/n1$")) == 4


def test_retries_give_up_with_the_last_error(server: FakeApiServer, client: KubeClient) -> None:
    server.fail("GET", "/api/v1/nodes/n1$", 429, times=10)
    with pytest.raises(TooManyRequests):
        client.get(NODES, "n1")
    assert len(server.requests_to("GET", "/api/v1/nodes/n1$")) == 4


def test_creates_are_not_repeated_after_a_server_error(server: FakeApiServer, client: KubeClient) -> None:
    server.fail("POST", f"/namespaces/{NS}/pods$", 500)
    with pytest.raises(ServerError):
        client.create(PODS, pod("a"), NS)
    assert len(server.requests_to("POST", "/pods$")) == 1
    server.fail("POST", f"/namespaces/{NS}/pods$", 429)
    assert client.create(PODS, pod("a"), NS)["metadata"]["name"] == "a"


def test_dropped_connections_are_retried_for_reads_only(server: FakeApiServer, client: KubeClient) -> None:
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    server.drop("GET", "/api/v1/nodes/n1$", times=2)
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    server.drop("POST", "/pods$")
    with pytest.raises(ApiUnreachable, match="no answer"):
        client.create(PODS, pod("a"), NS)


def test_unreachable_server(tmp_path: Path) -> None:
    with FakeApiServer() as stopped:
        url = stopped.url
    client = KubeClient(ClusterConfig(server=url), retry=RetryPolicy(attempts=2, initial_delay=0.001, jitter=0))
    with pytest.raises(ApiUnreachable, match=r"no answer from http://127\.0\.0\.1"):
        client.get(NODES, "n1")


def test_client_from_a_kubeconfig(server: FakeApiServer, tmp_path: Path) -> None:
    server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    client = KubeClient.from_environment({"KUBECONFIG": str(server.kubeconfig(tmp_path, namespace="team"))})
    assert client.namespace == "team"
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
