"""Pod UIDs and labels: label-name rules, variants, and this node's pods from a fake API server."""

from __future__ import annotations

import pytest

from gpu_operator.agents.metrics_exporter.attribution import PodRef
from gpu_operator.agents.metrics_exporter.pod_metadata import (
    ApiPods,
    LabelRules,
    PodMetadata,
    PodMetadataError,
    sanitize_label_name,
)
from gpu_operator.agents.metrics_exporter.variants import (
    PodLabelling,
    Variant,
    pod_variant,
    with_jobs,
)
from tests.agents.kube.fake_apiserver import FakeApiServer


def test_label_names_are_sanitised() -> None:
    assert sanitize_label_name("app.kubernetes.io/name") == "app_kubernetes_io_name"
    assert sanitize_label_name("9lives") == "_9lives"


def test_allowlist_and_collisions() -> None:
    rules = LabelRules.from_patterns(["^app", "team"])
    labels = {"app": "a", "app.kubernetes.io/name": "b", "team": "c", "tier": "d", "gpu": "e"}
    assert rules.labels(labels, taken=["app", "gpu", "pod_app"]) == (
        ("pod_app_conflict1", "a"),
        ("app_kubernetes_io_name", "b"),
        ("team", "c"),
    )
    assert LabelRules().labels({"gpu": "x"}, taken=["gpu"]) == (("pod_gpu", "x"),)


def test_pod_variants() -> None:
    pod = PodRef("trainer-0", "ml", "main", "2")
    metadata = {("ml", "trainer-0"): PodMetadata("uid-1", {"team": "vision"})}
    variant = pod_variant(pod, metadata, PodLabelling(pod_uid=True, pod_labels=True), taken=["gpu"])
    assert variant == Variant(
        (("team", "vision"),),
        (("pod", "trainer-0"), ("namespace", "ml"), ("container", "main"), ("pod_uid", "uid-1"), ("vgpu", "2")),
    )
    old = pod_variant(PodRef("p", "n", "c"), {}, PodLabelling(use_old_namespace=True, pod_uid=True), taken=[])
    assert old.attributes == (("pod_name", "p"), ("pod_namespace", "n"), ("container_name", "c"), ("pod_uid", ""))


def test_hpc_jobs_multiply_variants() -> None:
    variants = with_jobs([Variant()], ["1001", "1002"])
    assert [v.attributes for v in variants] == [(("hpc_job", "1001"),), (("hpc_job", "1002"),)]
    assert with_jobs([Variant()], []) == (Variant(),)


def _pod(name: str, node: str, labels: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {"nodeName": node}}


def test_this_nodes_pods_from_the_api_server() -> None:
    with FakeApiServer() as server:
        mine = server.add(_pod("trainer-0", "node-a", {"team": "vision"}))
        server.add(_pod("elsewhere", "node-b", {}))
        pods = ApiPods(server.client(), "node-a").pods()
        assert pods == {("ml", "trainer-0"): PodMetadata(mine["metadata"]["uid"], {"team": "vision"})}
        assert server.requests[-1].query["fieldSelector"] == "spec.nodeName=node-a"
        server.fail("GET", "/api/v1/pods", 403, times=10, reason="Forbidden")
        with pytest.raises(PodMetadataError, match="listing this node's pods failed"):
            ApiPods(server.client(), "node-a").pods()
