"""The NodeFeature output: GFD's object name, label, owners, and writes only when something changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpu_operator.agents.feature_discovery.node_feature import (
    NodeFeatureSink,
    node_feature_object,
    owner_references,
    resolve_owner_references,
)
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
LABELS = {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "1"}
DS_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "name": "gpu-feature-discovery",
    "uid": "ds-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}
GFD_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "gpu-feature-discovery-x7k2p",
        "namespace": NS,
        "uid": "pod-uid",
        "ownerReferences": [DS_OWNER],
    },
}
OWNERS = [
    {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "gpu-feature-discovery",
        "uid": "ds-uid",
        "controller": True,
    },
    {"apiVersion": "v1", "kind": "Pod", "name": "gpu-feature-discovery-x7k2p", "uid": "pod-uid"},
]


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        yield running


def test_the_object_gfd_publishes() -> None:
    assert node_feature_object("node-a", NS, LABELS, OWNERS) == {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": "nvidia-features-for-node-a",
            "namespace": NS,
            "labels": {"nfd.node.kubernetes.io/node-name": "node-a"},
            "ownerReferences": OWNERS,
        },
        "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}}, "labels": LABELS},
    }
    assert "ownerReferences" not in node_feature_object("node-a", NS, LABELS)["metadata"]


def test_owners_come_from_the_pods_daemonset() -> None:
    assert owner_references(GFD_POD) == OWNERS
    standalone = {**GFD_POD, "metadata": {**GFD_POD["metadata"], "ownerReferences": []}}
    assert owner_references(standalone) == []


def test_owner_resolution_tolerates_a_missing_pod(server: FakeApiServer) -> None:
    client = server.client()
    assert resolve_owner_references(client, NS, "") == []
    assert resolve_owner_references(client, NS, "gone") == []
    server.add(GFD_POD)
    assert resolve_owner_references(client, NS, "gpu-feature-discovery-x7k2p") == OWNERS


def test_create_then_skip_unchanged_then_replace(server: FakeApiServer) -> None:
    sink = NodeFeatureSink(server.client(), NS, "node-a", OWNERS)
    sink.publish(LABELS)
    stored = server.get("nodefeatures", "nvidia-features-for-node-a", NS)
    assert stored is not None and stored["spec"]["labels"] == LABELS
    assert stored["metadata"]["ownerReferences"] == OWNERS
    writes = lambda: [r.method for r in server.requests if r.method != "GET"]
    sink.publish(dict(LABELS))
    assert writes() == ["POST"]
    server.update("nodefeatures", "nvidia-features-for-node-a", NS, lambda o: o["metadata"]["labels"].update(extra="x"))
    sink.publish({**LABELS, "nvidia.com/gpu.count": "2"})
    assert writes() == ["POST", "PUT"]
    stored = server.get("nodefeatures", "nvidia-features-for-node-a", NS)
    assert stored is not None
    assert stored["metadata"]["labels"] == {"nfd.node.kubernetes.io/node-name": "node-a"}
    assert stored["spec"]["labels"]["nvidia.com/gpu.count"] == "2"
    sink.withdraw()
    assert server.get("nodefeatures", "nvidia-features-for-node-a", NS) is not None


def test_owners_are_dropped_when_none_are_known(server: FakeApiServer) -> None:
    NodeFeatureSink(server.client(), NS, "node-a", OWNERS).publish(LABELS)
    NodeFeatureSink(server.client(), NS, "node-a").publish(LABELS)
    stored = server.get("nodefeatures", "nvidia-features-for-node-a", NS)
    assert stored is not None and "ownerReferences" not in stored["metadata"]
