"""The controller's part of GPU fault remediation against the fake API server: the partial drain takes the pods
holding the faulty GPU, by the device plugin's allocation (the node agent's `gpu-pods` annotation) and by DRA claim
(the claim's allocated device, read back to its UUID through NVIDIA's ResourceSlice), and every GPU pod of the node
where either is unknown; a failed patch keeps the drain from running."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube.resources.core_v1 import Node

from gpu_operator.agents.controller.actuator import Actuator
from gpu_operator.agents.controller.remediation import HOLDERS_ANNOTATION, Remediator
from gpu_operator.agents.kube import NODES, RetryPolicy, connect
from gpu_operator.remediation import DrainPods, RemediationPolicy
from tests.agents.kube.fake_apiserver import FakeApiServer, ResourceType

NS = "gpu-operator"
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]


def _pod(name: str, *, gpu: bool = True, claim: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "c"}
    if gpu and claim is None:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    spec: dict[str, Any] = {"nodeName": "gpu-0", "containers": [container]}
    if claim is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": name, "namespace": "ml", "ownerReferences": OWNER}}


def _claim(name: str, device: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "gpu-0", "device": device}]}}}}


def _slice() -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "attributes": {"uuid": {"string": f"GPU-{'AB'[i]}"}}} for i in (0, 1)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-0-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-0", "pool": {"name": "gpu-0", "generation": 1,
                                                                              "resourceSliceCount": 1},
                     "devices": devices}}


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.register(ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True))
        running.register(ResourceType("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False))
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"}})
        for pod in (_pod("train-a"), _pod("train-b"), _pod("web", gpu=False), _pod("dra-a", claim="claim-a"),
                    _pod("dra-b", claim="claim-b")):
            running.add(pod)
        running.add(_claim("claim-a", "gpu-0"))
        running.add(_claim("claim-b", "gpu-1"))
        running.add(_slice())
        yield running


def _remediator(server: FakeApiServer) -> Remediator:
    client = connect(server.client().config, retry=RetryPolicy(attempts=2, initial_delay=0.001))
    actuator = Actuator(client, NS)
    return Remediator(client, RemediationPolicy(), NS, validator_apps=("nvidia-operator-validator",),
                      pods_on=actuator.pods_on, patch_node=actuator.patch_node, clock=lambda: 1000.0)


def _node(server: FakeApiServer, holders: dict[str, list[str]] | None) -> Any:
    if holders is not None:
        server.update("nodes", "gpu-0", None, lambda n: n["metadata"].setdefault("annotations", {}).update(
            {HOLDERS_ANNOTATION: json.dumps(holders)}))
    return Node.from_dict(server.client().get(NODES, "gpu-0"))


def _evicted(server: FakeApiServer) -> list[str]:
    return sorted(r.path.split("/")[-2] for r in server.requests if r.path.endswith("/eviction"))


def test_a_partial_drain_takes_the_pods_of_the_faulty_gpu_by_plugin_and_by_claim(server: FakeApiServer) -> None:
    node = _node(server, {"GPU-A": ["ml/train-a"]})
    _remediator(server)._drain(DrainPods("gpu-0", "evict", ("GPU-A",), 2000.0), node)
    assert _evicted(server) == ["dra-a", "train-a"]


def test_without_the_agents_word_every_gpu_pod_goes(server: FakeApiServer) -> None:
    """No kubelet answer on the node (or not written yet): never fewer pods than hold the GPU."""
    node = _node(server, None)
    _remediator(server)._drain(DrainPods("gpu-0", "evict", ("GPU-A",), 2000.0), node)
    assert _evicted(server) == ["dra-a", "dra-b", "train-a", "train-b"]


def test_a_gpu_the_annotation_does_not_name_means_every_gpu_pod(server: FakeApiServer) -> None:
    node = _node(server, {"GPU-B": ["ml/train-b"]})
    _remediator(server)._drain(DrainPods("gpu-0", "evict", ("GPU-A",), 2000.0), node)
    assert _evicted(server) == ["dra-a", "dra-b", "train-a", "train-b"]


def test_a_whole_node_drain_takes_every_pod_but_daemonsets(server: FakeApiServer) -> None:
    _remediator(server)._drain(DrainPods("gpu-0", "evict", (), 2000.0), _node(server, None))
    assert _evicted(server) == ["dra-a", "dra-b", "train-a", "train-b", "web"]
