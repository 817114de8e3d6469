"""Sandbox operands together: which render for which mode (controllers/state_manager.go, v26), shared builders."""

from __future__ import annotations

import pytest

from gpu_operator.config import parse_config
from gpu_operator.render.context import RenderContext
from gpu_operator.render.operands import (
    cc_manager,
    kata_sandbox_device_plugin,
    sandbox_common,
    sandbox_device_plugin,
    sandbox_validator,
    vfio_manager,
    vgpu_device_manager,
    vgpu_manager,
)
from tests.render.operands.helpers import assert_valid, pod_of, render_operand
from tests.support.agents import with_agents

MODULES = (
    vgpu_manager,
    vgpu_device_manager,
    sandbox_validator,
    vfio_manager,
    sandbox_device_plugin,
    kata_sandbox_device_plugin,
    cc_manager,
)
VGPU = {"enabled": True, "repository": "registry.example.com/nvidia", "version": "550.90.05"}


def _document(mode: str, **operator: object) -> dict:
    return {"operator": {"sandboxWorkloads": {"enabled": True, "mode": mode}, "vgpuManager": VGPU, **operator}}


def _rendered_keys(document: dict) -> set[str]:
    return {module.KEY for module in MODULES if render_operand(module.render, document)}


def test_nothing_renders_without_sandbox_workloads() -> None:
    document = {"operator": {"vgpuManager": VGPU, "ccManager": {"enabled": True}}}
    assert _rendered_keys(document) == set()
    assert _rendered_keys({}) == set()


def test_kubevirt_mode_gets_the_kubevirt_plugin_and_no_cc_manager() -> None:
    assert _rendered_keys(_document("kubevirt")) == {
        "vgpu_manager", "vgpu_device_manager", "sandbox_validator", "vfio_manager", "sandbox_device_plugin",
    }


def test_kata_mode_gets_the_kata_plugin_and_the_cc_manager() -> None:
    assert _rendered_keys(_document("kata")) == {
        "vgpu_manager", "vgpu_device_manager", "sandbox_validator", "vfio_manager", "kata_sandbox_device_plugin",
        "cc_manager",
    }


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("vgpuDeviceManager", "vgpu_device_manager"),
        ("vfioManager", "vfio_manager"),
        ("kataSandboxDevicePlugin", "kata_sandbox_device_plugin"),
        ("ccManager", "cc_manager"),
    ],
)
def test_each_operand_follows_its_own_switch(section: str, key: str) -> None:
    assert key not in _rendered_keys(_document("kata", **{section: {"enabled": False}}))


def test_sandbox_plugin_follows_its_own_switch() -> None:
    assert "sandbox_device_plugin" not in _rendered_keys(_document("kubevirt", sandboxDevicePlugin={"enabled": False}))


def test_vgpu_manager_is_off_by_default() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True}}}
    assert "vgpu_manager" not in _rendered_keys(document)


def test_no_sandbox_operand_gets_a_runtime_class_even_with_the_nri_plugin() -> None:
    for mode in ("kubevirt", "kata"):
        document = _document(mode, cdi={"enabled": True, "nriPluginEnabled": True})
        for module in MODULES:
            for obj in render_operand(module.render, document):
                if obj["kind"] != "DaemonSet":
                    continue
                assert "runtimeClassName" not in pod_of(obj), obj["metadata"]["name"]
                assert not any(
                    key.startswith("nvidia.cdi.k8s.io/")
                    for key in obj["spec"]["template"]["metadata"].get("annotations", {})
                )


def test_no_openshift_scc_rule_or_annotation_is_rendered() -> None:
    for mode in ("kubevirt", "kata"):
        for module in MODULES:
            objects = render_operand(module.render, _document(mode))
            for obj in objects:
                for rule in obj.get("rules", []):
                    assert "security.openshift.io" not in rule["apiGroups"], obj["metadata"]["name"]
                assert "openshift.io/scc" not in obj["metadata"].get("annotations", {})
            assert_valid(objects)


def test_every_operand_object_lives_in_the_configured_namespace() -> None:
    document = {**_document("kata"), "namespace": "gpu-system"}
    for module in MODULES:
        for obj in render_operand(module.render, document):
            if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
                assert "namespace" not in obj["metadata"]
                continue
            assert obj["metadata"]["namespace"] == "gpu-system"
            for subject in obj.get("subjects", []):
                assert subject["namespace"] == "gpu-system"


def test_operand_rbac_drops_an_empty_role() -> None:
    ctx = RenderContext(parse_config({}))
    rule = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}
    kinds = [o["kind"] for o in sandbox_common.operand_rbac(ctx, "x", role_rules=[], cluster_rules=[rule])]
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    kinds = [o["kind"] for o in sandbox_common.operand_rbac(ctx, "x", role_rules=[rule], cluster_rules=[])]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding"]


def test_workload_gate_skips_other_node_roles_and_waits_for_its_file() -> None:
    gate = sandbox_common.workload_gate_init("g-validation", "vm-vgpu", "vgpu-devices-ready", "vGPU devices")
    script = gate["args"][0]
    assert gate["command"] == ["sh", "-c"]
    assert "/run/nvidia/validations/workload-type" in script
    assert '!= "vm-vgpu" ]; then' in script and "exit 0" in script
    assert script.rstrip().endswith("sleep 5; done")
    assert "[ ! -f /run/nvidia/validations/vgpu-devices-ready ]" in script
    assert gate["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]


def test_validator_invocation_per_implementation() -> None:
    agents = RenderContext(parse_config(with_agents()))
    nvidia = RenderContext(parse_config(with_agents(implementation="nvidia")))
    assert sandbox_common.validator_invocation(agents) == (["gpu-operator-agent", "validator"], [])
    assert sandbox_common.validator_invocation(nvidia) == (["sh", "-c"], ["nvidia-validator"])
    assert sandbox_common.validator_invocation(RenderContext(parse_config({}))) == (["sh", "-c"], ["nvidia-validator"])
