"""The lightkube adapter against the fake API server: every verb on plain dicts, selectors, pages, errors, retries."""

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
    Conflict,
    KubeClient,
    NotFound,
    PatchType,
    RetryPolicy,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


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


def test_create_get_and_generate_name_on_plain_dicts(server: FakeApiServer, client: KubeClient) -> None:
    created = client.create(PODS, {"metadata": {"generateName": "nvidia-cuda-validator-"}, "spec": {}}, NS)
    assert type(created) is dict
    name = created["metadata"]["name"]
    assert name.startswith("nvidia-cuda-validator-") and len(name) == len("nvidia-cuda-validator-") + 5
    fetched = client.get(PODS, name, NS)
    assert type(fetched) is dict and fetched["metadata"]["uid"] == created["metadata"]["uid"]
    request = server.requests_to("POST", f"/api/v1/namespaces/{NS}/pods$")[0]
    assert request.headers["authorization"] == "Bearer secret"
    assert request.headers["content-type"] == "application/json"
    assert (request.body["apiVersion"], request.body["kind"]) == ("v1", "Pod")  # lightkube fills them in


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
    server.add({**pod("d"), "metadata": {"name": "d", "namespace": "x", "labels": {"app": "nvidia-cuda-validator"}}})
    found = client.list(PODS, NS, labels={"app": "nvidia-cuda-validator"}, fields={"spec.nodeName": "n1"})
    assert [p["metadata"]["name"] for p in found] == ["a"] and type(found[0]) is dict
    request = server.requests_to("GET", f"/api/v1/namespaces/{NS}/pods$")[-1]
    assert request.query["labelSelector"] == "app=nvidia-cuda-validator"
    assert request.query["fieldSelector"] == "spec.nodeName=n1"
    everywhere = client.list(PODS, labels={"app": ["nvidia-cuda-validator", "none"]})
    assert sorted(p["metadata"]["name"] for p in everywhere) == ["a", "b", "d"]
    across = server.requests_to("GET", "^/api/v1/pods$")[-1]
    assert across.query["labelSelector"] == "app in (none,nvidia-cuda-validator)"


def test_list_follows_continue_tokens(server: FakeApiServer, client: KubeClient) -> None:
    for index in range(7):
        server.add(pod(f"p{index}"))
    found = client.list(PODS, NS, page_size=3)
    assert [p["metadata"]["name"] for p in found] == [f"p{i}" for i in range(7)]
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


def test_patch_merge_by_default_and_json(server: FakeApiServer, client: KubeClient) -> None:
    client.create(PODS, pod("a", app="x"), NS)
    merged = client.patch(PODS, "a", {"metadata": {"labels": {"app": None, "tier": "gpu"}}}, NS)
    assert merged["metadata"]["labels"] == {"tier": "gpu"}
    patched = client.patch(
        PODS, "a", [{"op": "add", "path": "/metadata/labels/b", "value": "2"}], NS, patch_type=PatchType.JSON
    )
    assert patched["metadata"]["labels"] == {"tier": "gpu", "b": "2"}
    types = [r.headers["content-type"] for r in server.requests if r.method == "PATCH"]
    assert types == ["application/merge-patch+json", "application/json-patch+json"]


def test_delete_sends_the_grace_period_and_propagation(server: FakeApiServer, client: KubeClient) -> None:
    client.create(PODS, pod("a"), NS)
    assert client.delete(PODS, "a", NS, grace_period_seconds=0, propagation_policy="Background") is None
    assert server.get("pods", "a", NS) is None
    request = server.requests_to("DELETE", "/pods/a$")[0]
    assert request.query == {"gracePeriodSeconds": "0", "propagationPolicy": "Background"}
    with pytest.raises(NotFound):
        client.delete(PODS, "a", NS)


def test_wrong_token_is_unauthorized(server: FakeApiServer) -> None:
    with pytest.raises(Unauthorized):
        server.client(token="wrong").get(NODES, "n1")


def test_throttling_and_server_errors_are_retried_with_backoff(server: FakeApiServer) -> None:
    server.add(NODE)
    waits: list[float] = []
    policy = RetryPolicy(attempts=5, initial_delay=0.5, max_delay=8, jitter=0.0, max_retry_after=30)
    client = KubeClient(server.client().config, retry=policy, sleep=waits.append)
    server.fail("GET", "/api/v1/nodes/n1$", 429, times=1, retry_after="3")
    server.fail("GET", "/api/v1/nodes/n1$", 503, times=2)
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    assert waits == [3.0, 1.0, 2.0]
    assert len(server.requests_to("GET", "/api/v1/nodes/n1$")) == 4


def test_backoff_grows_with_jitter_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_delay=1, max_delay=5, jitter=0.5, random=lambda: 1.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.5, 3.0, 6.0, 7.5]
    assert RetryPolicy(jitter=0, max_retry_after=10).delay(1, retry_after=60) == 10


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
    server.fail("POST", f"/namespaces/{NS}/pods$", 503, retry_after="0")  # the server asked to come back
    server.fail("POST", f"/namespaces/{NS}/pods$", 429)
    assert client.create(PODS, pod("a"), NS)["metadata"]["name"] == "a"
    assert len(server.requests_to("POST", "/pods$")) == 4


def test_dropped_connections_are_retried_for_reads_only(server: FakeApiServer, client: KubeClient) -> None:
    server.add(NODE)
    server.drop("GET", "/api/v1/nodes/n1$", times=2)
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"
    server.drop("POST", "/pods$")
    with pytest.raises(ApiUnreachable, match="no answer from 127.0.0.1"):
        client.create(PODS, pod("a"), NS)
    assert len(server.requests_to("POST", "/pods$")) == 1


def test_an_unreachable_server_is_retried_then_reported() -> None:
    with FakeApiServer() as stopped:
        url_client = stopped.client()
    waits: list[float] = []
    client = KubeClient(url_client.config, retry=RetryPolicy(attempts=3, initial_delay=0.001), sleep=waits.append)
    with pytest.raises(ApiUnreachable, match=r"no answer from 127\.0\.0\.1: ConnectError"):
        client.create(PODS, pod("a"), NS)  # nothing was sent, so even a create is tried again
    assert len(waits) == 2


def test_client_from_a_kubeconfig(server: FakeApiServer, tmp_path: Path) -> None:
    server.add(NODE)
    client = KubeClient.from_environment({"KUBECONFIG": str(server.kubeconfig(tmp_path, namespace="team"))})
    assert client.namespace == "team"
    assert client.get(NODES, "n1")["metadata"]["name"] == "n1"


def test_lightkube_registry_keeps_its_typed_core_resources(client: KubeClient, server: FakeApiServer) -> None:
    """Our dict classes are not registered: other lightkube users in the process still load the typed `Pod`."""
    from lightkube.codecs import resource_registry
    from lightkube.resources.core_v1 import Pod

    client.create(PODS, pod("a"), NS)
    assert resource_registry.load("v1", "Pod") is Pod
    assert type(client.get(PODS, "a", NS)) is dict


def test_requests_are_not_logged_one_by_one(client: KubeClient, server: FakeApiServer,
                                            caplog: pytest.LogCaptureFixture) -> None:
    server.add(NODE)
    with caplog.at_level("INFO"):
        client.get(NODES, "n1")
    assert not [r for r in caplog.records if r.name.startswith("httpx")]
