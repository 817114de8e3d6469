"""The env of the rendered `nvidia-dcgm-exporter` DaemonSet is accepted and means what it means upstream."""

from __future__ import annotations

from typing import Any

from gpu_operator.agents.exposition import ListenAddress
from gpu_operator.agents.metrics_exporter.settings import resolve_settings
from gpu_operator.render.operands import dcgm_exporter
from tests.render.operands.helpers import container, find, render_operand

#: The defaults run NVIDIA's exporter until an agents image is configured; these tests are about our agent.
AGENTS: dict[str, Any] = {"agents": {"image": {"repository": "registry.example.com/gpu/agents", "tag": "0.1.0"}}}

EVERYTHING: dict[str, Any] = {
    **AGENTS,
    "operator": {
        "dcgmExporter": {
            "enablePodLabels": True,
            "enablePodUID": True,
            "config": {"name": "metrics"},
            "hpcJobMapping": {"enabled": True, "directory": "/var/lib/hpc-jobs"},
        },
        "dcgm": {"enabled": True},
    }
}


def daemonset_env(document: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    exporter = container(find(render_operand(dcgm_exporter.render, document), "DaemonSet"), "nvidia-dcgm-exporter")
    env = {e["name"]: e.get("value", "node-a") for e in exporter["env"]}  # NODE_NAME comes from the pod's node
    return exporter["command"], env


def test_default_daemonset() -> None:
    command, env = daemonset_env(AGENTS)
    assert command == ["gpu-operator-agent", "metrics-exporter"]
    settings = resolve_settings({}, env)
    assert settings.address == ListenAddress("", 9400)
    assert settings.kubernetes and settings.node_name == "node-a"
    assert settings.collectors == "/etc/dcgm-exporter/dcp-metrics-included.csv"
    assert settings.collect_interval_ms == 30000


def test_every_option_the_daemonset_can_set() -> None:
    _, env = daemonset_env(EVERYTHING)
    settings = resolve_settings({}, env)
    assert settings.collectors == "/etc/dcgm-exporter/dcgm-metrics.csv"
    assert settings.pod_labels and settings.pod_uid
    assert settings.hpc_job_dir == "/var/lib/hpc-jobs"
    assert settings.remote_hostengine == "nvidia-dcgm:5555"
    # the metrics ConfigMap is mounted as the collectors file, never read through the API (as NVIDIA does)
    assert settings.configmap_data == "none"
