"""Which program runs each operand, and why: NVIDIA's images until an agents image exists, then our shipped agents.

Nobody publishes the agents image, so the defaults run NVIDIA's published images everywhere; `agents.image` (an
image you pushed) or `agents.build` (the stack builds and pushes it) turns our agents on, and `implementation` and
`overrides` choose per operand from there. One function decides, for the render and the summary alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.agents import SHIPPED_AGENTS, choose_implementation
from gpu_operator.config.importers import import_helm_values
from gpu_operator.manifests import SUMMARY_HEADER, summary_rows
from gpu_operator.render import render
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import OPERAND_SECTIONS, operand_implementation
from gpu_operator.render.registry import OPERANDS, render_operands
from tests.render.test_published_images import referenced_images
from tests.support.agents import AGENTS_IMAGE, with_agents

BUILD = {"registry": {"resourceGroup": "rg-gpu", "name": "acrGpu01"}, "repository": "gpu/agents", "tag": "1.0.0"}


def _containers(objects: list[dict], daemonset: str) -> dict[str, dict]:
    [ds] = [o for o in objects if o["kind"] == "DaemonSet" and o["metadata"]["name"] == daemonset]
    pod = ds["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def _agent_containers(objects: list[dict]) -> list[str]:
    found = []
    for obj in objects:
        if obj["kind"] == "DaemonSet":
            pod = obj["spec"]["template"]["spec"]
            found += [
                f"{obj['metadata']['name']}/{c['name']}" for c in [*pod.get("initContainers", []), *pod["containers"]]
                if c.get("command", [""])[0] == "gpu-operator-agent"
            ]
    return found


SHIPPED = ("gfd", "dcgmExporter", "devicePlugin", "migManager", "validator", "nodeStatusExporter", "driverManager",
           "healthMonitor")


def test_this_release_ships_all_eight_agents() -> None:
    assert SHIPPED_AGENTS == set(SHIPPED)
    ctx = RenderContext(parse_config(with_agents()))
    assert [s for s in SHIPPED if ctx.uses_agent(s)] == list(SHIPPED)


@pytest.mark.parametrize("document", [
    {},
    {"operator": {"nodeStatusExporter": {"enabled": True}, "dcgm": {"enabled": True}}},
    {"agents": {"overrides": {"gfd": "nvidia"}}},
    {"agents": {"implementation": "nvidia", "gpuDevices": True}},
])
def test_without_an_agents_image_every_operand_runs_nvidias_image(document: dict[str, Any]) -> None:
    objects = render(parse_config(document))
    assert _agent_containers(objects) == []
    images = {reference for _, reference in referenced_images(objects)}
    assert all(image.startswith("nvcr.io/nvidia/") for image in images), images
    assert all(o["kind"] != "CustomResourceDefinition" for o in objects)  # the GpuDevice CRD comes with our GFD


def test_with_an_image_every_operand_with_an_agent_runs_it() -> None:
    objects = render(parse_config(with_agents()))
    plugin = _containers(objects, "nvidia-device-plugin-daemonset")["nvidia-device-plugin"]
    assert (plugin["image"], plugin["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "device-plugin"])
    mig = _containers(objects, "nvidia-mig-manager")["nvidia-mig-manager"]
    assert (mig["image"], mig["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "mig-manager"])
    manager = _containers(objects, "nvidia-driver-daemonset")["k8s-driver-manager"]
    assert (manager["image"], manager["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "driver-manager"])
    gfd = _containers(objects, "gpu-feature-discovery")["gpu-feature-discovery"]
    assert (gfd["image"], gfd["command"]) == (AGENTS_IMAGE, ["gpu-operator-agent", "feature-discovery"])
    exporter = _containers(objects, "nvidia-dcgm-exporter")["nvidia-dcgm-exporter"]
    assert exporter["command"] == ["gpu-operator-agent", "metrics-exporter"]
    assert _containers(objects, "nvidia-operator-validator")["driver-validation"]["image"] == AGENTS_IMAGE


def test_a_built_image_is_referenced_by_its_tag_in_the_render() -> None:
    config = parse_config({"agents": {"build": BUILD}})
    assert config.agents.image.reference == "acrgpu01.azurecr.io/gpu/agents:1.0.0"
    objects = render(config)
    gfd = _containers(objects, "gpu-feature-discovery")["gpu-feature-discovery"]
    assert gfd["image"] == "acrgpu01.azurecr.io/gpu/agents:1.0.0"
    assert "imagePullSecrets" not in objects[-1]["spec"]["template"]["spec"]  # AcrPull on the kubelet identity


# --- the decision and its reason ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("agents", "section", "expected"), [
    ({}, "gfd", "nvidia: no agents image configured"),
    ({}, "devicePlugin", "nvidia: no agents image configured"),
    ({}, "driverManager", "nvidia: no agents image configured"),
    ({}, None, "nvidia: no agent for this operand"),
    ({"implementation": "nvidia"}, "gfd", "nvidia: implementation nvidia (agents.implementation)"),
    ({"overrides": {"gfd": "nvidia"}}, "gfd", "nvidia: override (agents.overrides.gfd)"),
    ({"image": {"repository": "registry.example.com/a"}}, "gfd", "agents: agents.image"),
    ({"image": {"repository": "registry.example.com/a"}}, "driverManager", "agents: agents.image"),
    ({"build": BUILD}, "validator", "agents: agents.build"),
    ({"build": BUILD, "implementation": "nvidia"}, "validator",
     "nvidia: implementation nvidia (agents.implementation)"),
    ({"build": BUILD, "implementation": "nvidia", "overrides": {"validator": "agents"}}, "validator",
     "agents: override (agents.overrides.validator)"),
    ({"build": BUILD, "overrides": {"dcgmExporter": "nvidia"}}, "dcgmExporter",
     "nvidia: override (agents.overrides.dcgmExporter)"),
    ({"build": BUILD, "overrides": {"dcgmExporter": "nvidia"}}, "gfd", "agents: agents.build"),
])
def test_choice_and_reason(agents: dict[str, Any], section: str | None, expected: str) -> None:
    config = parse_config({"agents": agents})
    choice = choose_implementation(config.agents, section)
    assert str(choice) == expected
    if section is not None:
        assert RenderContext(config).uses_agent(section) == (choice.implementation == "agents")


def test_every_operand_gets_a_reason() -> None:
    ctx = RenderContext(parse_config(with_agents(overrides={"nodeStatusExporter": "nvidia"})))
    reasons = {op.key: str(operand_implementation(ctx, op.key)) for op in OPERANDS}
    assert reasons["gpu_feature_discovery"] == reasons["dcgm_exporter"] == reasons["operator_validator"] == (
        "agents: agents.image"
    )
    assert reasons["node_status_exporter"] == "nvidia: override (agents.overrides.nodeStatusExporter)"
    assert reasons["device_plugin"] == reasons["mig_manager"] == "agents: agents.image"
    assert reasons["container_toolkit"] == reasons["sandbox_validator"] == "nvidia: no agent for this operand"
    assert set(OPERAND_SECTIONS) <= set(reasons)


# --- asking for what cannot run ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("agents", "named"), [
    ({"implementation": "agents"}, "agents (implementation)"),
    ({"overrides": {"gfd": "agents", "validator": "agents"}}, "agents (overrides.gfd, overrides.validator)"),
    ({"implementation": "agents", "overrides": {"dcgmExporter": "agents"}},
     "agents (implementation, overrides.dcgmExporter)"),
])
def test_asking_for_agents_without_an_image_is_an_error_naming_the_fix(agents: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": agents})
    [problem] = error.value.problems
    assert problem.path == "agents"
    assert problem.message.startswith(named)
    assert "agents.image" in problem.message and "agents.build" in problem.message and "make image" in problem.message


def test_image_and_build_together_is_an_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": {"image": {"repository": "registry.example.com/a"}, "build": BUILD}})
    [problem] = error.value.problems
    assert problem.path == "agents" and "not both" in problem.message


@pytest.mark.parametrize(("agents", "path", "text"), [
    ({"image": {"tag": "1.0"}}, "agents.image.repository", "Field required"),
    ({"image": {"repository": "Registry.example.com/Agents"}}, "agents.image.repository", "not a valid image repository"),
    ({"image": {"repository": "registry.example.com/a", "tag": "v1:2"}}, "agents.image.tag", "not a valid image tag"),
    ({"build": {"registry": {"resourceGroup": "rg", "name": "a-b"}}}, "agents.build.registry.name",
     "not an Azure Container Registry name"),
    ({"build": {"registry": {"name": "acrgpu01"}}}, "agents.build.registry.resourceGroup", "Field required"),
    ({"build": {**BUILD, "repository": "GPU/Agents"}}, "agents.build.repository",
     "not a valid image repository"),
    ({"build": {"registry": {"resourceGroup": "rg", "name": "acrgpu01", "location": "westeurope"}}},
     "agents.build.registry", "only to a registry the stack creates"),
])
def test_bad_image_settings_name_the_field(agents: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"agents": agents})
    assert [(p.path, text in p.message) for p in error.value.problems] == [(path, True)], error.value.problems


def test_asking_for_an_unshipped_agent_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent ships in this release; the rule stays for the next agent that does not yet."""
    from gpu_operator.config import agents

    monkeypatch.setattr(agents, "SHIPPED_AGENTS", agents.SHIPPED_AGENTS - {"driverManager"})
    with pytest.raises(ConfigError) as error:
        parse_config(with_agents(overrides={"driverManager": "agents", "gfd": "agents"}))
    [problem] = error.value.problems
    assert problem.path == "agents.overrides"
    assert "driverManager" in problem.message and "set nvidia" in problem.message


# --- imports -----------------------------------------------------------------------------------------------------

def test_an_imported_mirror_keeps_every_operand_on_the_mirror() -> None:
    """An air-gapped values file that mirrors NVIDIA's images gets no image from anywhere else."""
    mirror = "mirror.example.com/nvidia"
    values = {
        section: {"repository": mirror}
        for section in ("validator", "driver", "toolkit", "devicePlugin", "dcgmExporter", "gfd", "migManager",
                        "nodeStatusExporter")
    }
    values["driver"]["manager"] = {"repository": mirror}
    values["nodeStatusExporter"]["enabled"] = True
    values["dcgmExporter"]["serviceMonitor"] = {"enabled": False}
    document = import_helm_values(values)
    objects = render(parse_config(document))
    images = {reference for _, reference in referenced_images(objects)}
    assert images and all(image.startswith(f"{mirror}/") for image in images), images
    assert _agent_containers(objects) == []


def test_nvidia_config_manager_next_to_our_gfd_only_switches_the_config() -> None:
    document = with_agents({
        "operator": {"devicePlugin": {"config": {"name": "sharing", "default": "x4"}}},
        "configs": {"devicePlugin": {"x4": {"sharing": {"timeSlicing": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 4}]}}}}},
    }, overrides={"devicePlugin": "nvidia"})
    objects = render(parse_config(document))
    sidecar = _containers(objects, "gpu-feature-discovery")["config-manager"]
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert sidecar["command"] == ["config-manager"]
    assert sidecar["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    # it cannot find a Python agent by argv[0]; the agent watches the file itself
    assert (env["SEND_SIGNAL"], env["SIGNAL"], env["PROCESS_TO_SIGNAL"]) == ("false", "", "")
    assert not sidecar.get("securityContext", {}).get("privileged", False)
    # next to NVIDIA's device plugin it signals as upstream
    plugin_sidecar = _containers(objects, "nvidia-device-plugin-daemonset")["config-manager"]
    plugin_env = {e["name"]: e.get("value") for e in plugin_sidecar["env"]}
    assert (plugin_env["SEND_SIGNAL"], plugin_env["PROCESS_TO_SIGNAL"]) == ("true", "nvidia-device-plugin")


# --- the summary `make run` prints --------------------------------------------------------------------------------

def _runs(document: dict[str, Any]) -> dict[str, str]:
    config = parse_config(document)
    return {row[0]: row[3] for row in summary_rows(render_operands(config), config)}


def test_summary_says_which_implementation_runs_each_operand_and_why() -> None:
    runs = _runs({})
    assert runs["gpu-feature-discovery"] == "nvidia: no agents image configured"
    assert runs["state-operator-validation"] == "nvidia: no agents image configured"
    assert runs["state-device-plugin"] == "nvidia: no agents image configured"
    assert _runs(with_agents())["state-device-plugin"] == "agents: agents.image"
    assert runs["state-driver"] == "nvidia: no agent for this operand"
    assert runs["pre-requisites"] == "-"
    runs = _runs(with_agents(overrides={"dcgmExporter": "nvidia"}))
    assert runs["gpu-feature-discovery"] == runs["state-operator-validation"] == "agents: agents.image"
    assert runs["state-dcgm-exporter"] == "nvidia: override (agents.overrides.dcgmExporter)"
    assert _runs({"agents": {"build": BUILD}})["gpu-feature-discovery"] == "agents: agents.build"


def test_summary_agrees_with_the_render() -> None:
    """The RUNS column and the containers come from one decision: a row saying agents runs our agent's command."""
    for document in ({}, with_agents(), with_agents(implementation="nvidia", overrides={"gfd": "agents"})):
        config = parse_config(document)
        operands = render_operands(config)
        for operand, row in zip(operands, summary_rows(operands, config), strict=True):
            if operand.key not in OPERAND_SECTIONS:
                continue
            runs_agent = bool(_agent_containers([o for o in operand.objects if o["kind"] == "DaemonSet"]))
            assert row[3].startswith("agents:") == runs_agent, (operand.key, row[3])


def test_render_summary_prints_the_runs_column(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    from gpu_operator.cli import main

    assert main(["render", "-o", str(tmp_path / "out"), "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("STATE"))
    assert header.split() == list(SUMMARY_HEADER)
    gfd = next(line for line in lines if line.startswith("gpu-feature-discovery "))
    assert "nvidia: no agents image configured" in gfd
