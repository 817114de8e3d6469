"""The API side: lightkube objects read into facts, and the requests with their retries and refusals."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError
from lightkube.models.core_v1 import (
    Container,
    EmptyDirVolumeSource,
    NodeSpec,
    PodSpec,
    PodStatus,
    ResourceRequirements,
    Volume,
)
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from gpu_operator.agents.driver_manager.command import kube_client
from gpu_operator.agents.driver_manager.kube import (
    EvictionRefused,
    KubeFailure,
    NodeApi,
    node_facts,
    pod_facts,
)
from gpu_operator.agents.driver_manager.labels import CORDONED_ANNOTATION
from gpu_operator.agents.kube import RetryPolicy, connect


def api_error(code: int, message: str = "nope") -> ApiError:
    request = httpx2.Request("GET", "https://api")
    response = httpx2.Response(code, json={"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                           "message": message, "code": code}, request=request)
    return ApiError(request=request, response=response)


def test_pod_facts() -> None:
    owner = OwnerReference(apiVersion="apps/v1", kind="ReplicaSet", name="rs", uid="u", controller=True)
    pod = Pod(
        metadata=ObjectMeta(name="train", namespace="ml", labels={"a": "b"}, ownerReferences=[owner],
                            annotations={"kubernetes.io/config.mirror": "x"}, deletionTimestamp="2026-01-01T00:00:00Z"),
        spec=PodSpec(containers=[Container(name="c", resources=ResourceRequirements(limits={"nvidia.com/gpu": "1"}))],
                     nodeSelector={"k": "v"}, volumes=[Volume(name="scratch", emptyDir=EmptyDirVolumeSource())]),
        status=PodStatus(phase="Running"),
    )
    facts = pod_facts(pod)
    assert (facts.key, facts.controller, facts.gpu, facts.terminating, facts.mirror, facts.empty_dir) == (
        "ml/train", "ReplicaSet", True, True, True, True)
    assert facts.node_selector == {"k": "v"} and facts.labels == {"a": "b"}
    bare = pod_facts(Pod(metadata=ObjectMeta(name="p", namespace="d"), spec=PodSpec(containers=[Container(name="c")])))
    assert (bare.controller, bare.gpu, bare.phase, bare.terminating) == ("", False, "Pending", False)
    mig = Container(name="i", resources=ResourceRequirements(requests={"nvidia.com/mig-1g.10gb": "1"}))
    assert pod_facts(Pod(metadata=ObjectMeta(name="p", namespace="d"),
                         spec=PodSpec(containers=[Container(name="c")], initContainers=[mig]))).gpu


def test_node_facts() -> None:
    node = Node(metadata=ObjectMeta(name="n", labels={"a": "b"}, annotations={"c": "d"}),
                spec=NodeSpec(unschedulable=True))
    assert node_facts(node) == node_facts(node) and node_facts(node).unschedulable
    assert not node_facts(Node(metadata=ObjectMeta(name="n"))).unschedulable


class FakeClient:
    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def _answer(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, args, kwargs))
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._answer("get", *args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> Any:
        return self._answer("list", *args, **kwargs) or []

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        return self._answer("patch", *args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._answer("create", *args, **kwargs)


def api(client: FakeClient) -> tuple[NodeApi, list[float]]:
    slept: list[float] = []
    return NodeApi(client, "gpu-0"), slept  # type: ignore[arg-type]


def test_patches_are_merge_patches_of_the_changed_keys_only() -> None:
    client = FakeClient()
    node, _ = api(client)
    node.set_labels({"k": "v"})
    node.cordon()
    node.uncordon()
    bodies = [(call[1][2], call[2]["patch_type"]) for call in client.calls]
    assert bodies == [
        ({"metadata": {"labels": {"k": "v"}}}, PatchType.MERGE),
        ({"metadata": {"annotations": {CORDONED_ANNOTATION: "true"}}, "spec": {"unschedulable": True}},
         PatchType.MERGE),
        ({"metadata": {"annotations": {CORDONED_ANNOTATION: None}}, "spec": {"unschedulable": False}},
         PatchType.MERGE),
    ]


def test_pods_are_listed_once_across_namespaces_by_node() -> None:
    client = FakeClient([Pod(metadata=ObjectMeta(name="p", namespace="d"), spec=PodSpec(containers=[]))])
    node, _ = api(client)
    assert [p.key for p in node.pods()] == ["d/p"]
    assert client.calls[0][2] == {"namespace": "*", "fields": {"spec.nodeName": "gpu-0"}}


def test_transient_failures_are_retried_by_the_agents_one_policy_then_reported(tmp_path: Any) -> None:
    """The driver manager's client is the agents' shared one: throttling (plain text, as the API server's own
    filter answers) and server errors are retried in its transport; what still fails is a KubeFailure."""
    from tests.agents.kube.fake_apiserver import FakeApiServer

    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}})
        client = kube_client({"KUBECONFIG": str(server.kubeconfig(tmp_path))})
        node = NodeApi(client, "gpu-0")
        server.fail("PATCH", "/api/v1/nodes/gpu-0$", 429, text="Too many requests, please try again later.\n",
                    retry_after="0")
        server.fail("PATCH", "/api/v1/nodes/gpu-0$", 503, retry_after="0")
        node.set_labels({"k": "v"})
        assert server.get("nodes", "gpu-0")["metadata"]["labels"] == {"k": "v"}
        assert len(server.requests_to("PATCH", "/api/v1/nodes/gpu-0$")) == 3
        server.fail("GET", "/api/v1/nodes/gpu-0$", 500, times=100)
        quick = connect(client._client.config, retry=RetryPolicy(attempts=3, initial_delay=0.001))
        with pytest.raises(KubeFailure, match=r"get node gpu-0: 500 injected failure"):
            NodeApi(quick, "gpu-0").read_node()
        assert len(server.requests_to("GET", "/api/v1/nodes/gpu-0$")) == 3


def test_a_refusal_is_not_retried() -> None:
    client = FakeClient(api_error(403, 'nodes "gpu-0" is forbidden'))
    node, slept = api(client)
    with pytest.raises(KubeFailure, match="403 nodes \"gpu-0\" is forbidden"):
        node.read_node()
    assert slept == []


def test_evictions() -> None:
    client = FakeClient(None, api_error(404), api_error(429, "Cannot evict pod as it would violate the pod's "
                                                             "disruption budget."))
    node, slept = api(client)
    node.evict("ml", "train")
    name, args, kwargs = client.calls[0]
    assert (type(args[0]).__name__, kwargs) == ("PodEviction", {"name": "train", "namespace": "ml"})
    assert args[0].metadata.name == "train" and args[0].metadata.namespace == "ml"
    node.evict("ml", "gone")  # 404: already gone
    with pytest.raises(EvictionRefused, match="disruption budget"):
        node.evict("ml", "guarded")
    assert slept == []
