"""cuda and plugin checks through the fake API server: pods created, watched to the end, cleaned up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.validator import Timing, ValidationFailed
from gpu_operator.agents.validator.gpu_resources import gpu_resource
from gpu_operator.agents.validator.workload_checks import cuda, plugin
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.agents.validator.helpers import NAMESPACE, NODE, Node, context, node_tree

IMAGE = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.10.0"
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"}]
VALIDATOR_DS = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "nvidia-operator-validator", "namespace": NAMESPACE},
    "spec": {"template": {"spec": {"tolerations": TOLERATIONS}}},
}
WORKLOAD = {"validator_image": IMAGE, "validator_runtime_class": "nvidia", "validator_image_pull_secrets": ("ngc",)}


def old_pod(name: str, node: str, app: str = "nvidia-cuda-validator") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": app}},
        "spec": {"nodeName": node},
    }


def gpu_node(**allocatable: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE},
        "status": {"allocatable": {"cpu": "8", **allocatable}},
    }


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return node_tree(tmp_path)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(watch_timeout=0.5) as running:
        running.add(VALIDATOR_DS)
        yield running


def created_pods(server: FakeApiServer) -> list[dict]:
    return [r.body for r in server.requests_to("POST", f"/namespaces/{NAMESPACE}/pods$")]


def test_cuda_runs_the_workload_pod_and_cleans_up(node: Node, server: FakeApiServer) -> None:
    server.add(old_pod("nvidia-cuda-validator-old", NODE))
    server.add(old_pod("nvidia-cuda-validator-other", "another-node"))
    server.simulate_pods("Succeeded")
    cuda(context(node, server, **WORKLOAD))
    assert (node.status / "cuda-ready").read_text() == ""
    (sent,) = created_pods(server)
    assert sent["metadata"]["generateName"] == "nvidia-cuda-validator-"
    assert sent["spec"]["nodeName"] == NODE and sent["spec"]["tolerations"] == TOLERATIONS
    assert sent["spec"]["runtimeClassName"] == "nvidia" and sent["spec"]["imagePullSecrets"] == [{"name": "ngc"}]
    assert sent["spec"]["initContainers"][0]["image"] == IMAGE
    assert [p["metadata"]["name"] for p in server.objects("pods", NAMESPACE)] == ["nvidia-cuda-validator-other"]
    deletes = [r.path.rsplit("/", 1)[1] for r in server.requests if r.method == "DELETE"]
    assert deletes[0] == "nvidia-cuda-validator-old" and deletes[1].startswith("nvidia-cuda-validator-")
    assert all(r.query["gracePeriodSeconds"] == "0" and r.query["propagationPolicy"] == "Background"
               for r in server.requests if r.method == "DELETE")


def test_cuda_without_workload_only_writes_the_file(node: Node) -> None:
    cuda(context(node, with_workload=False))
    assert (node.status / "cuda-ready").exists()


def test_a_failed_cuda_pod_fails_the_check_and_is_kept(node: Node, server: FakeApiServer) -> None:
    server.simulate_pods("Failed")
    with pytest.raises(ValidationFailed, match=r"pod nvidia-cuda-validator-\w+ failed"):
        cuda(context(node, server, **WORKLOAD))
    assert len(server.objects("pods", NAMESPACE)) == 1
    assert not (node.status / "cuda-ready").exists()


def test_a_pod_that_never_finishes_times_out(node: Node, server: FakeApiServer) -> None:
    with pytest.raises(
        ValidationFailed, match=r"gave up waiting for pod nvidia-cuda-validator-\w+ to succeed \(phase Pending\)"
    ):
        cuda(context(node, server, timing=Timing(pod_timeout=0.3), **WORKLOAD))


def test_cuda_needs_the_image_and_the_validator_daemonset(node: Node, server: FakeApiServer) -> None:
    with pytest.raises(ValidationFailed, match="VALIDATOR_IMAGE is not set"):
        cuda(context(node, server))
    server.remove("daemonsets", "nvidia-operator-validator", NAMESPACE)
    with pytest.raises(ValidationFailed, match="unable to retrieve the operator validator daemonset"):
        cuda(context(node, server, **WORKLOAD))


def test_plugin_waits_until_the_node_advertises_gpus(node: Node, server: FakeApiServer) -> None:
    server.add(gpu_node())
    server.later(
        0.1,
        lambda: server.update(
            "nodes", NODE, None, lambda n: n["status"]["allocatable"].update({"nvidia.com/gpu": "8"})
        ),
    )
    plugin(context(node, server, with_workload=False))
    assert (node.status / "plugin-ready").exists()
    assert created_pods(server) == []


def test_plugin_workload_uses_a_mig_device_with_the_mixed_strategy(node: Node, server: FakeApiServer) -> None:
    server.add(gpu_node(**{"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "0"}))
    server.simulate_pods("Succeeded")
    plugin(context(node, server, mig_strategy="mixed", **WORKLOAD))
    (sent,) = created_pods(server)
    assert sent["metadata"]["labels"] == {"app": "nvidia-device-plugin-validator"}
    assert sent["spec"]["initContainers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "1"}
    assert server.objects("pods", NAMESPACE) == []
    assert (node.status / "plugin-ready").exists()


def test_plugin_gives_up_when_no_gpu_is_advertised(node: Node, server: FakeApiServer) -> None:
    server.add(gpu_node(**{"nvidia.com/mig-1g.10gb": "7"}))
    with pytest.raises(ValidationFailed, match="GPU resources are not discovered by the node"):
        plugin(context(node, server, timing=Timing(resource_timeout=0.3), mig_strategy="single"))
    assert not (node.status / "plugin-ready").exists()


def test_plugin_reports_a_missing_node(node: Node, server: FakeApiServer) -> None:
    with pytest.raises(ValidationFailed, match=f"unable to fetch node {NODE}"):
        plugin(context(node, server))


@pytest.mark.parametrize(
    ("resources", "strategy", "expected"),
    [
        ({"nvidia.com/gpu": "4"}, "none", "nvidia.com/gpu"),
        ({"nvidia.com/gpu": "0"}, "single", None),
        ({"nvidia.com/gpu.shared": "16"}, "single", "nvidia.com/gpu.shared"),
        ({"nvidia.com/mig-1g.10gb": "7"}, "single", None),
        (
            {"nvidia.com/gpu": "2", "nvidia.com/mig-2g.20gb": "3", "nvidia.com/mig-1g.10gb": "1"},
            "mixed",
            "nvidia.com/mig-1g.10gb",
        ),
        ({"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "0"}, "mixed", "nvidia.com/gpu"),
        ({"amd.com/gpu": "1"}, "mixed", None),
    ],
)
def test_gpu_resource_by_strategy(resources: dict, strategy: str, expected: str | None) -> None:
    assert gpu_resource(resources, strategy) == expected
