"""Feature discovery publishing through the API: the NodeFeature output and the GpuDevice inventory, end to end."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_operator.agents.feature_discovery.command import Loader, make_sink, open_gpus
from gpu_operator.agents.feature_discovery.labels import (
    LabelPolicy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.feature_discovery.loop import (
    AgentFailure,
    Dependencies,
    read_machine_type,
    run,
)
from gpu_operator.agents.feature_discovery.publishing import build_sink
from gpu_operator.agents.feature_discovery.settings import Settings, resolve_settings
from gpu_operator.agents.feature_discovery.sinks import FeatureFileSink, SinkUnavailable
from gpu_operator.agents.nvml import open_nvml
from tests.agents.kube.fake_apiserver import FakeApiServer

NS = "gpu-operator"
NODE = "gpu-node-1"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "gpu-feature-discovery-abcde",
        "namespace": NS,
        "uid": "pod-uid",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "gpu-feature-discovery",
                "uid": "ds-uid",
                "controller": True,
            }
        ],
    },
}


class NoSignals:
    def wait(self, timeout: float | None) -> int | None:
        raise AssertionError("oneshot runs never wait")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(token="gfd-token") as running:
        running.add(POD)
        running.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "uid": "node-uid"}})
        yield running


@pytest.fixture
def env(server: FakeApiServer, tmp_path: Path) -> dict[str, str]:
    return {
        "GPU_OPERATOR_NVML": "fake:a100-4x-mixed-mig",
        "GFD_ONESHOT": "true",
        "GFD_MACHINE_TYPE_FILE": "",
        "MIG_STRATEGY": "mixed",
        "NODE_NAME": NODE,
        "NAMESPACE": NS,
        "POD_NAME": "gpu-feature-discovery-abcde",
        "KUBECONFIG": str(server.kubeconfig(tmp_path)),
        "GFD_OUTPUT_FILE": str(tmp_path / "features.d" / "gfd"),
    }


def deps(env: dict[str, str]) -> Dependencies:
    return Dependencies(
        load_settings=Loader({}, env),
        open_nvml=open_gpus,
        make_sink=make_sink,
        read_machine_type=read_machine_type,
        signals=NoSignals(),
        clock=lambda: 1700000000.0,
    )


def test_node_feature_mode_publishes_gfds_object(server: FakeApiServer, env: dict[str, str]) -> None:
    assert run(deps(env)) == 0
    stored = server.get("nodefeatures", f"nvidia-features-for-{NODE}", NS)
    assert stored is not None
    expected = node_labels(
        take_snapshot(open_nvml("fake:a100-4x-mixed-mig")),
        LabelPolicy(resolve_settings({}, env).mig_strategy),
        None,
        1700000000,
    )
    assert stored["spec"]["labels"] == expected
    assert stored["spec"]["labels"]["nvidia.com/mig-1g.10gb.count"] == "9"
    assert [o["kind"] for o in stored["metadata"]["ownerReferences"]] == ["DaemonSet", "Pod"]
    assert not Path(env["GFD_OUTPUT_FILE"]).exists()
    assert server.objects("gpudevices") == []


def test_gpu_devices_beside_the_features_file(server: FakeApiServer, env: dict[str, str]) -> None:
    env.update({"GFD_USE_NODE_FEATURE_API": "false", "GFD_PUBLISH_GPU_DEVICES": "true"})
    assert run(deps(env)) == 0
    assert "nvidia.com/gpu.count=4\n" in Path(env["GFD_OUTPUT_FILE"]).read_text()
    devices = server.objects("gpudevices")
    assert [
        (d["spec"]["index"], d["status"]["mig"]["mode"]) for d in sorted(devices, key=lambda d: d["spec"]["index"])
    ] == [
        (0, "enabled"),
        (1, "enabled"),
        (2, "disabled"),
        (3, "disabled"),
    ]
    assert server.objects("nodefeatures") == []


def test_a_node_feature_that_cannot_be_written_is_fatal(server: FakeApiServer, env: dict[str, str]) -> None:
    server.fail("POST", f"/namespaces/{NS}/nodefeatures$", 403, reason="Forbidden")
    with pytest.raises(AgentFailure, match="failed to publish the NodeFeature object: injected failure"):
        run(deps(env))


def test_inventory_failures_are_not_fatal(
    server: FakeApiServer, env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    env["GFD_PUBLISH_GPU_DEVICES"] = "true"
    server.fail("GET", "/gpudevices$", 403, reason="Forbidden", times=1)
    with caplog.at_level(logging.WARNING):
        assert run(deps(env)) == 0
    assert "could not publish the GpuDevice inventory" in caplog.text
    assert server.get("nodefeatures", f"nvidia-features-for-{NODE}", NS) is not None


def test_sink_selection(server: FakeApiServer, env: dict[str, str], tmp_path: Path) -> None:
    nvml = open_nvml("fake:t4-1x")

    def no_client(_: Settings) -> object:
        raise AssertionError("the file output needs no API client")

    file_only = Settings(output_file=str(tmp_path / "gfd"), use_node_feature_api=False)
    assert isinstance(build_sink(file_only, nvml, no_client), FeatureFileSink)  # type: ignore[arg-type]
    with pytest.raises(SinkUnavailable, match="required flag node-name not set"):
        build_sink(Settings(namespace=NS), nvml, lambda _: server.client())
    with pytest.raises(SinkUnavailable, match="required flag namespace not set"):
        build_sink(Settings(node_name=NODE), nvml, lambda _: server.client())


def test_without_api_access_the_message_points_at_the_file_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(SinkUnavailable, match=r"no Kubernetes API access .*--use-node-feature-api=false"):
        build_sink(Settings(node_name=NODE, namespace=NS), open_nvml("fake:t4-1x"))
