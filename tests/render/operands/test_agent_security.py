"""Least privilege for our agents: the table, the securityContext it yields, and what holds across every stack."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import yaml

from gpu_operator.config import parse_config
from gpu_operator.config.agents import AGENT_OPERANDS
from gpu_operator.config.kube import EnvVar
from gpu_operator.render import render
from gpu_operator.render.context import RenderContext
from gpu_operator.render.operands.agent_security import (
    AGENT_PRIVILEGES,
    AGENTS_IMAGE_USER,
    VALIDATOR_CHECKS,
    Privileges,
    secure_agent,
    secure_check,
    secure_config_managers,
    security_context,
)
from tests.golden.cases import CASES
from tests.support.agents import AGENTS_IMAGE, with_agents

Object = dict[str, Any]
AGENTS = RenderContext(parse_config(with_agents()))
NVIDIA = RenderContext(parse_config({"agents": {"implementation": "nvidia"}}))
UNPRIVILEGED_ROOT = {
    "runAsUser": 0,
    "runAsGroup": 0,
    "privileged": False,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
OUR_KEYS = ("readOnlyRootFilesystem", "capabilities", "seccompProfile", "allowPrivilegeEscalation")


def _plugin_container(*env: tuple[str, str]) -> Object:
    return {
        "name": "nvidia-device-plugin",
        "env": [{"name": name, "value": value} for name, value in env],
        "securityContext": {"privileged": True},
    }


@cache
def _stack(case: str) -> tuple[Object, ...]:
    """A golden case with the agents image configured, so every agent the case allows runs."""
    return tuple(render(parse_config(with_agents(yaml.safe_load(CASES[case].read_text())))))


def _containers(objects: tuple[Object, ...]) -> Iterator[tuple[str, Object]]:
    for obj in objects:
        if obj["kind"] != "DaemonSet":
            continue
        pod = obj["spec"]["template"]["spec"]
        for item in [*pod.get("initContainers", []), *pod["containers"]]:
            yield f"{obj['metadata']['name']}/{item['name']}", item


# --- the table --------------------------------------------------------------------------------------------------


def test_every_agent_section_has_a_row() -> None:
    assert set(AGENT_PRIVILEGES) == set(AGENT_OPERANDS)


def test_privileged_only_where_the_program_needs_the_host() -> None:
    assert {s for s, p in AGENT_PRIVILEGES.items() if p.privileged} == {
        "nodeStatusExporter", "migManager", "driverManager",
    }
    assert {c for c, p in VALIDATOR_CHECKS.items() if p.privileged} == {
        "driver", "vfio-pci", "vgpu-manager", "vgpu-devices", "cc-manager",
    }
    assert {c for c, p in VALIDATOR_CHECKS.items() if not p.privileged} == {"toolkit", "cuda", "plugin"}


def test_every_row_says_why() -> None:
    rows = [*AGENT_PRIVILEGES.values(), *VALIDATOR_CHECKS.values()]
    assert all(len(row.reason) > 30 for row in rows)


def test_gpu_reading_agents_ask_the_runtime_for_every_gpu() -> None:
    asks = {s for s, p in AGENT_PRIVILEGES.items() if ("NVIDIA_VISIBLE_DEVICES", "all") in p.runtime_env}
    # the device plugin's own env already asks for all GPUs
    assert asks == {"gfd", "dcgmExporter", "migManager", "healthMonitor"}
    assert ("NVIDIA_MIG_CONFIG_DEVICES", "all") in AGENT_PRIVILEGES["migManager"].runtime_env
    # the exporter reads GPU instances, which NVML refuses without the MIG monitor capability
    assert ("NVIDIA_MIG_MONITOR_DEVICES", "all") in AGENT_PRIVILEGES["dcgmExporter"].runtime_env


# --- security_context -------------------------------------------------------------------------------------------


def test_non_root_context() -> None:
    assert security_context(Privileges(AGENTS_IMAGE_USER, "reads an emptyDir")) == {
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "runAsNonRoot": True,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_root_context_adds_only_the_named_capabilities_once() -> None:
    privileges = Privileges(0, "reads PCI config space", capabilities=("SYS_ADMIN",))
    assert security_context(privileges, admin=True) == {
        **UNPRIVILEGED_ROOT, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
    }
    assert security_context(Privileges(0, "writes a status file")) == UNPRIVILEGED_ROOT


def test_privileged_context_states_root() -> None:
    assert security_context(Privileges(0, "loads modules", privileged=True), admin=True) == {
        "privileged": True, "runAsUser": 0,
    }


# --- applying it ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "admin"),
    [
        ((), False),
        ((("NVIDIA_MIG_MONITOR_DEVICES", ""),), False),
        ((("NVIDIA_MIG_MONITOR_DEVICES", "all"),), True),
        ((("NVIDIA_MIG_CONFIG_DEVICES", "all"),), True),
        ((("DEVICE_LIST_STRATEGY", "envvar"),), False),
        ((("DEVICE_LIST_STRATEGY", "cdi-annotations,volume-mounts"),), True),
    ],
)
def test_admin_only_runtime_requests_add_sys_admin(env: tuple[tuple[str, str], ...], admin: bool) -> None:
    item = _plugin_container(*env)
    secure_agent(AGENTS, "devicePlugin", item)
    added = item["securityContext"]["capabilities"].get("add", [])
    assert added == (["SYS_ADMIN"] if admin else [])
    assert item["securityContext"]["privileged"] is False


def test_the_users_env_counts_for_admin_only_requests() -> None:
    item = _plugin_container()
    secure_agent(AGENTS, "devicePlugin", item, [EnvVar(name="NVIDIA_MIG_MONITOR_DEVICES", value="all")])
    assert item["securityContext"]["capabilities"]["add"] == ["SYS_ADMIN"]


def test_nvidia_implementation_is_left_alone() -> None:
    item = _plugin_container(("NVIDIA_MIG_MONITOR_DEVICES", "all"))
    original = copy.deepcopy(item)
    secure_agent(NVIDIA, "devicePlugin", item)
    secure_check(NVIDIA, "toolkit", item)
    pod = {"initContainers": [{**copy.deepcopy(item), "name": "config-manager-init"}], "containers": [item]}
    secure_config_managers(NVIDIA, "devicePlugin", pod)
    assert item == original
    assert pod["initContainers"][0] == {**original, "name": "config-manager-init"}


def test_runtime_env_fills_only_what_is_missing() -> None:
    item = {"name": "gpu-feature-discovery", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}
    secure_agent(AGENTS, "gfd", item)
    assert item["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    bare: Object = {"name": "nvidia-mig-manager"}
    secure_agent(AGENTS, "migManager", bare)
    assert bare["env"] == [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}, {"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"},
    ]


def test_selinux_level_is_kept_and_bidirectional_mounts_become_host_to_container() -> None:
    item = {
        "name": "toolkit-validation",
        "securityContext": {"privileged": True, "seLinuxOptions": {"level": "s0"}},
        "volumeMounts": [
            {"name": "status", "mountPath": "/run/nvidia/validations", "mountPropagation": "Bidirectional"},
            {"name": "host-root", "mountPath": "/host", "readOnly": True},
        ],
    }
    secure_check(AGENTS, "toolkit", item)
    assert item["securityContext"] == {**UNPRIVILEGED_ROOT, "seLinuxOptions": {"level": "s0"}}
    assert item["volumeMounts"] == [
        {"name": "status", "mountPath": "/run/nvidia/validations", "mountPropagation": "HostToContainer"},
        {"name": "host-root", "mountPath": "/host", "readOnly": True},
    ]
    driver = {"name": "driver-validation", "volumeMounts": [{"name": "s", "mountPath": "/s",
                                                             "mountPropagation": "Bidirectional"}]}
    secure_check(AGENTS, "driver", driver)
    assert driver["volumeMounts"][0]["mountPropagation"] == "Bidirectional"


# --- across every rendered stack --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_agents_image_container_states_its_user(case: str) -> None:
    """The agents image's own user is not root: a container that needs root must say so."""
    objects = _stack(case)
    for where, item in _containers(objects):
        if item.get("image") != AGENTS_IMAGE:
            continue
        context = item.get("securityContext", {})
        assert "runAsUser" in context, where
        assert context.get("runAsNonRoot", False) == (context["runAsUser"] != 0), where


@pytest.mark.parametrize("case", sorted(CASES))
def test_bidirectional_propagation_only_in_privileged_containers(case: str) -> None:
    for where, item in _containers(_stack(case)):
        shared = [m["name"] for m in item.get("volumeMounts", []) if m.get("mountPropagation") == "Bidirectional"]
        if shared:
            assert item.get("securityContext", {}).get("privileged") is True, (where, shared)


def test_nvidia_implementation_renders_no_agent_security() -> None:
    for where, item in _containers(_stack("nvidia-implementation")):
        context = item.get("securityContext", {})
        assert not any(key in context for key in OUR_KEYS), where


def test_default_stack_keeps_privileged_only_for_driver_and_mig_work() -> None:
    agent_containers = [
        (where.split("/")[1], item) for where, item in _containers(_stack("default"))
        if item.get("command", [""])[0] == "gpu-operator-agent"
    ]
    privileged = {name for name, item in agent_containers if item["securityContext"].get("privileged")}
    assert privileged == {"driver-validation", "k8s-driver-manager", "nvidia-mig-manager"}
    assert {name for name, _ in agent_containers} - privileged == {
        "gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-device-plugin",
        "toolkit-validation", "cuda-validation", "plugin-validation", "health-monitor",
    }
