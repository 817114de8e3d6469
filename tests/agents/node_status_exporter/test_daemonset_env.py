"""The env of the rendered `nvidia-node-status-exporter` DaemonSet is accepted as the validator reads it."""

from __future__ import annotations

from gpu_operator.agents.exposition import ListenAddress
from gpu_operator.agents.node_status_exporter.settings import resolve_settings
from gpu_operator.render.operands import node_status_exporter
from tests.render.operands.helpers import container, find, render_operand


def test_rendered_daemonset_env() -> None:
    # the defaults run NVIDIA's exporter until an agents image is configured; this test is about our agent
    agents = {"image": {"repository": "registry.example.com/gpu/agents", "tag": "0.1.0"}}
    document = {"agents": agents, "operator": {"nodeStatusExporter": {"enabled": True}}}
    objects = render_operand(node_status_exporter.render, document)
    exporter = container(find(objects, "DaemonSet"), "nvidia-node-status-exporter")
    env = {e["name"]: e.get("value", "node-a") for e in exporter["env"]}
    assert exporter["command"] == ["gpu-operator-agent", "node-status-exporter"]
    settings = resolve_settings({}, env)
    assert (settings.listen, settings.node_name, settings.component) == (ListenAddress("", 8000), "node-a", "metrics")
    assert settings.output_dir == "/run/nvidia/validations" and settings.nvml is None
