"""What this release's defaults run: shipped agents from the agents image, NVIDIA's programs for the others."""

from __future__ import annotations

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.agents import SHIPPED_AGENTS
from gpu_operator.render import render
from gpu_operator.render.context import RenderContext

AGENTS_IMAGE = "ghcr.io/pulumi-gpu-operator/agents:0.1.0"


def _containers(objects: list[dict], daemonset: str) -> dict[str, dict]:
    [ds] = [o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"] == daemonset]
    pod = ds["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def test_this_release_ships_four_agents() -> None:
    assert SHIPPED_AGENTS == {"gfd", "dcgmExporter", "validator", "nodeStatusExporter"}
    ctx = RenderContext(parse_config({}))
    assert [s for s in ("gfd", "dcgmExporter", "validator", "nodeStatusExporter") if ctx.uses_agent(s)] == [
        "gfd", "dcgmExporter", "validator", "nodeStatusExporter",
    ]
    assert not any(ctx.uses_agent(s) for s in ("devicePlugin", "migManager", "driverManager"))


def test_default_stack_runs_nvidia_programs_where_no_agent_ships() -> None:
    objects = render(parse_config({}))
    plugin = _containers(objects, "nvidia-device-plugin-daemonset")["nvidia-device-plugin"]
    assert plugin["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    assert _containers(objects, "nvidia-mig-manager")["nvidia-mig-manager"]["image"].startswith("nvcr.io/")
    manager = _containers(objects, "nvidia-driver-daemonset")["k8s-driver-manager"]
    assert manager["command"] == ["driver-manager"]
    gfd = _containers(objects, "gpu-feature-discovery")["gpu-feature-discovery"]
    assert (gfd["image"], gfd["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "feature-discovery"])
    exporter = _containers(objects, "nvidia-dcgm-exporter")["nvidia-dcgm-exporter"]
    assert exporter["command"] == ["gpu-operator-agent", "metrics-exporter"]


def test_asking_for_an_unshipped_agent_is_an_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": {"overrides": {"devicePlugin": "agents", "gfd": "agents"}}})
    [problem] = error.value.problems
    assert problem.path == "agents.overrides"
    assert "devicePlugin" in problem.message and "set nvidia" in problem.message


def test_nvidia_config_manager_next_to_our_gfd_only_switches_the_config() -> None:
    document = {
        "operator": {"devicePlugin": {"config": {"name": "sharing", "default": "x4"}}},
        "configs": {"devicePlugin": {"x4": {"sharing": {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 4}]}}}}},
    }
    objects = render(parse_config(document))
    sidecar = _containers(objects, "gpu-feature-discovery")["config-manager"]
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert sidecar["command"] == ["config-manager"]
    assert sidecar["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    # it cannot find a Python agent by argv[0]; the agent watches the file itself
    assert (env["SEND_SIGNAL"], env["SIGNAL"], env["PROCESS_TO_SIGNAL"]) == ("false", "", "")
    assert "privileged" not in sidecar.get("securityContext", {})
    # next to NVIDIA's device plugin it signals as upstream
    plugin_sidecar = _containers(objects, "nvidia-device-plugin-daemonset")["config-manager"]
    plugin_env = {e["name"]: e.get("value") for e in plugin_sidecar["env"]}
    assert (plugin_env["SEND_SIGNAL"], plugin_env["PROCESS_TO_SIGNAL"]) == ("true", "nvidia-device-plugin")
