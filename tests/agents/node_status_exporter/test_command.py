"""`gpu-operator-agent node-status-exporter`: settings as the validator reads them, and serving over HTTP."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpu_operator.agents import cli
from gpu_operator.agents.exposition import ListenAddress
from gpu_operator.agents.node_status_exporter import gauges as g
from gpu_operator.agents.node_status_exporter.command import probes_for, start
from gpu_operator.agents.node_status_exporter.settings import (
    SettingsError,
    resolve_settings,
)
from tests.agents.kube.fake_apiserver import FakeApiServer


def test_settings_from_the_daemonsets_env() -> None:
    env = {"COMPONENT": "metrics", "METRICS_PORT": "8000", "NODE_NAME": "worker-1", "NVIDIA_VISIBLE_DEVICES": "void"}
    settings = resolve_settings({}, env)
    assert (settings.metrics_port, settings.node_name, settings.output_dir) == (8000, "worker-1",
                                                                                 "/run/nvidia/validations")
    assert settings.listen == ListenAddress("", 8000)
    assert (settings.status_interval, settings.driver_interval, settings.plugin_interval, settings.pci_interval) == (
        30.0, 60.0, 30.0, 60.0)
    assert resolve_settings({"address": "127.0.0.1:0"}, env).listen == ListenAddress("127.0.0.1", 0)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "must not be empty string for metrics exporter"),
        ({"NODE_NAME": "n", "METRICS_PORT": "0"}, "METRICS_PORT"),
        ({"NODE_NAME": "n", "COMPONENT": "driver"}, "'metrics' component only"),
        ({"NODE_NAME": "n", "GPU_OPERATOR_NVML": "fake:"}, "invalid NVML choice"),
    ],
)
def test_bad_settings(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve_settings({}, env)


def test_the_device_plugin_probe_needs_the_api_server(tmp_path: Path) -> None:
    settings = resolve_settings({"node_name": "worker-1", "nvml": "fake:h100-8x"}, {})
    assert [p.name for p in probes_for(settings, {}, time.time)] == [
        "status files", "driver validation", "NVIDIA PCI devices"]
    with FakeApiServer() as server:
        labels = {"feature.node.kubernetes.io/pci-15b3.present": "true", "nvidia.com/mig.config.state": "pending"}
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "labels": labels},
                    "status": {"capacity": {"cpu": "96", "nvidia.com/gpu": "8", "rdma/ib": "8"}}})
        probes = probes_for(settings, {"KUBECONFIG": str(server.kubeconfig(tmp_path))}, lambda: 1795254312.0)
        assert [p.name for p in probes][2] == "device plugin devices"
        assert probes[2].run() == {
            g.DEVICE_PLUGIN_DEVICES: 8.0, g.DEVICE_PLUGIN_LAST_SUCCESS: 1795254312.0, g.DEVICE_PLUGIN_ENABLED: 1.0,
            g.INFINIBAND_PRESENT: 1.0, g.RDMA_DEVICES: 8.0, g.DRIVER_UPGRADE_STATE: "", g.MIG_CONFIG_STATE: "pending"}
        server.remove("nodes", "worker-1")
        assert probes[2].run() == {g.DEVICE_PLUGIN_DEVICES: -1.0}


def test_serves_the_node_status(tmp_path: Path) -> None:
    (tmp_path / "driver-ready").touch()
    (tmp_path / "plugin-ready").touch()
    settings = resolve_settings(
        {"node_name": "worker-1", "address": "127.0.0.1:0", "output_dir": str(tmp_path), "nvml": "fake:h100-8x"}, {}
    )
    exporter = start(settings, {}, clock=lambda: 1795254312.0)
    try:
        deadline = time.monotonic() + 10
        while exporter.state.values()[g.NVIDIA_PCI_DEVICES] == 0 or exporter.state.values()[g.DRIVER_VALIDATION] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        url = f"http://127.0.0.1:{exporter.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
    finally:
        exporter.stop()
    values = {f.name: f.samples[0].value for f in text_string_to_metric_families(body)}
    assert values == {
        g.METRICS_READY: 1795254312.0,
        g.DRIVER_READY: 1.0,
        g.TOOLKIT_READY: 0.0,
        g.PLUGIN_READY: 1.0,
        g.CUDA_READY: 0.0,
        g.DRIVER_VALIDATION: 1.0,
        g.DRIVER_VALIDATION_LAST_SUCCESS: 1795254312.0,
        g.DEVICE_PLUGIN_DEVICES: 0.0,
        g.DEVICE_PLUGIN_LAST_SUCCESS: 0.0,
        g.NVIDIA_PCI_DEVICES: 8.0,
        # ours, beyond NVIDIA's (no Node read without an API server: the defaults)
        g.DEVICE_PLUGIN_ENABLED: 1.0,
        g.INFINIBAND_PRESENT: 0.0,
        g.RDMA_DEVICES: 0.0,
    }


def test_dispatch_and_one_line_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert cli.AGENTS["node-status-exporter"] == "gpu_operator.agents.node_status_exporter.command"
    assert cli.main(["node-status-exporter", "--metrics-port", "8000"]) == 1
    assert capsys.readouterr().err == (
        "gpu-operator-agent node-status-exporter: invalid -n <node-name> flag: "
        "must not be empty string for metrics exporter\n"
    )
