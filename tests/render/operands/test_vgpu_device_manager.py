"""state-vgpu-device-manager against reference/gpu-operator.md §3.12 and upstream assets/state-vgpu-device-manager."""

from __future__ import annotations

import yaml

from gpu_operator.render.operands import vgpu_device_manager
from tests.render.operands.helpers import (
    assert_valid,
    container,
    env_of,
    find,
    init_names,
    mounts,
    pod_of,
    render_operand,
    volume_paths,
)
from tests.support.agents import AGENTS_IMAGE, with_agents

ENABLED = {"operator": {"sandboxWorkloads": {"enabled": True}}}
NVIDIA = {**ENABLED, "agents": {"implementation": "nvidia"}}


def _with(**section: object) -> dict:
    return {"operator": {"sandboxWorkloads": {"enabled": True}, "vgpuDeviceManager": section}}


def test_absent_without_sandbox_or_when_disabled() -> None:
    assert render_operand(vgpu_device_manager.render) == []
    assert render_operand(vgpu_device_manager.render, _with(enabled=False)) == []


def test_objects_in_upstream_order() -> None:
    objects = render_operand(vgpu_device_manager.render, ENABLED)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-vgpu-device-manager"),
        ("Role", "nvidia-vgpu-device-manager"),
        ("RoleBinding", "nvidia-vgpu-device-manager"),
        ("ClusterRole", "nvidia-vgpu-device-manager"),
        ("ClusterRoleBinding", "nvidia-vgpu-device-manager"),
        ("ConfigMap", "default-vgpu-devices-config"),
        ("DaemonSet", "nvidia-vgpu-device-manager"),
    ]
    assert_valid(objects)


def test_rbac_rules() -> None:
    objects = render_operand(vgpu_device_manager.render, ENABLED)
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update"]},
    ]


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(vgpu_device_manager.render, NVIDIA), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-vgpu-device-manager"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.vgpu-device-manager": "true"}
    assert pod["serviceAccountName"] == "nvidia-vgpu-device-manager"
    assert "runtimeClassName" not in pod
    assert init_names(ds) == ["vgpu-manager-validation"]
    ctr = container(ds, "nvidia-vgpu-device-manager")
    assert ctr["image"] == "nvcr.io/nvidia/cloud-native/vgpu-device-manager:v0.5.0"
    assert env_of(ctr) == {
        "NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "CONFIG_FILE": "/vgpu-config/config.yaml",
        "DEFAULT_VGPU_CONFIG": "default",
    }
    assert mounts(ctr) == {
        "vgpu-config": "/vgpu-config", "host-sys": "/sys", "host-root": "/host", "driver-install-dir": "/driver-root",
    }
    assert volume_paths(ds) == {
        "host-sys": "/sys",
        "host-root": "/",
        "driver-install-dir": "/run/nvidia/driver",
        "run-nvidia-validations": "/run/nvidia/validations",
    }
    assert {"name": "vgpu-config", "configMap": {"name": "default-vgpu-devices-config"}} in pod["volumes"]


def test_waits_for_a_containerized_or_host_vgpu_manager() -> None:
    ds = find(render_operand(vgpu_device_manager.render, NVIDIA), "DaemonSet")
    init = container(ds, "vgpu-manager-validation")
    assert init["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert init["securityContext"]["runAsUser"] == 0
    script = init["args"][0]
    ready = "[ -f /run/nvidia/validations/vgpu-manager-ready ]"
    host_ready = "[ -f /run/nvidia/validations/host-vgpu-manager-ready ]"
    assert f"until {ready} || {host_ready}; do" in script
    assert init["volumeMounts"] == [
        {"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "mountPropagation": "Bidirectional"}
    ]


def test_gate_uses_the_agents_image_when_one_is_configured() -> None:
    ds = find(render_operand(vgpu_device_manager.render, ENABLED), "DaemonSet")
    assert container(ds, "vgpu-manager-validation")["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    ds = find(render_operand(vgpu_device_manager.render, with_agents(ENABLED)), "DaemonSet")
    assert container(ds, "vgpu-manager-validation")["image"] == AGENTS_IMAGE
    manager = container(ds, "nvidia-vgpu-device-manager")
    assert manager["image"] == "nvcr.io/nvidia/cloud-native/vgpu-device-manager:v0.5.0"


def test_custom_config_map_replaces_the_default_one() -> None:
    document = _with(config={"name": "my-vgpu-configs", "default": "A10-12Q"})
    objects = render_operand(vgpu_device_manager.render, document)
    assert [o for o in objects if o["kind"] == "ConfigMap"] == []
    ds = find(objects, "DaemonSet")
    assert {"name": "vgpu-config", "configMap": {"name": "my-vgpu-configs"}} in pod_of(ds)["volumes"]
    assert env_of(container(ds, "nvidia-vgpu-device-manager"))["DEFAULT_VGPU_CONFIG"] == "A10-12Q"


def test_config_default_wins_over_an_env_of_the_same_name() -> None:
    document = _with(
        config={"default": "L4-12Q"},
        env=[{"name": "DEFAULT_VGPU_CONFIG", "value": "T4-8Q"}, {"name": "LOG_LEVEL", "value": "debug"}],
    )
    ds = find(render_operand(vgpu_device_manager.render, document), "DaemonSet")
    ctr = container(ds, "nvidia-vgpu-device-manager")
    names = [e["name"] for e in ctr["env"]]
    assert names == ["NAMESPACE", "NODE_NAME", "CONFIG_FILE", "DEFAULT_VGPU_CONFIG", "LOG_LEVEL"]
    assert env_of(ctr)["DEFAULT_VGPU_CONFIG"] == "L4-12Q"


def test_default_config_map_holds_the_builtin_configs() -> None:
    config_map = find(render_operand(vgpu_device_manager.render, ENABLED), "ConfigMap")
    document = yaml.safe_load(config_map["data"]["config.yaml"])
    assert document["version"] == "v1"
    configs = document["vgpu-configs"]
    assert configs["A10-12Q"] == [{"devices": "all", "vgpu-devices": {"A10-12Q": 2}}]
    assert configs["H100-1-10C"] == [{"devices": "all", "vgpu-devices": {"H100-1-10C": 7}}]
    assert {"device-filter": "0x233110DE", "devices": "all", "vgpu-devices": {"H100-40C": 2}} in configs["default"]


def test_custom_driver_install_dir_moves_the_driver_root() -> None:
    document = {"operator": {
        "sandboxWorkloads": {"enabled": True}, "hostPaths": {"driverInstallDir": "/opt/nvidia/driver"},
    }}
    ds = find(render_operand(vgpu_device_manager.render, document), "DaemonSet")
    assert volume_paths(ds)["driver-install-dir"] == "/opt/nvidia/driver"
