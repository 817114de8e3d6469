"""state-kata-device-plugin against reference/gpu-operator.md §2, §3.12, §6 and upstream assets (v26)."""

from __future__ import annotations

from gpu_operator.render.operands import kata_sandbox_device_plugin
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

KATA = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}}
NVIDIA = {**KATA, "agents": {"implementation": "nvidia"}}


def test_absent_without_sandbox_in_kubevirt_mode_or_when_disabled() -> None:
    assert render_operand(kata_sandbox_device_plugin.render) == []
    kubevirt = {"operator": {"sandboxWorkloads": {"enabled": True}}}
    assert render_operand(kata_sandbox_device_plugin.render, kubevirt) == []
    disabled = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"},
                             "kataSandboxDevicePlugin": {"enabled": False}}}
    assert render_operand(kata_sandbox_device_plugin.render, disabled) == []


def test_objects_and_rbac() -> None:
    objects = render_operand(kata_sandbox_device_plugin.render, KATA)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-kata-sandbox-device-plugin"),
        ("Role", "nvidia-kata-sandbox-device-plugin"),
        ("RoleBinding", "nvidia-kata-sandbox-device-plugin"),
        ("ClusterRole", "nvidia-kata-sandbox-device-plugin"),
        ("ClusterRoleBinding", "nvidia-kata-sandbox-device-plugin"),
        ("DaemonSet", "nvidia-kata-sandbox-device-plugin-daemonset"),
    ]
    assert find(objects, "Role")["rules"][1]["apiGroups"] == ["nfd.k8s-sigs.io"]
    assert find(objects, "ClusterRoleBinding")["subjects"][0]["name"] == "nvidia-kata-sandbox-device-plugin"
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(kata_sandbox_device_plugin.render, NVIDIA), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-kata-sandbox-device-plugin-daemonset"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.kata-sandbox-device-plugin": "true"}
    assert pod["serviceAccountName"] == "nvidia-kata-sandbox-device-plugin"
    assert "runtimeClassName" not in pod
    assert init_names(ds) == ["vfio-pci-validation"]
    gate = container(ds, "vfio-pci-validation")
    assert '"vm-passthrough"' in gate["args"][0] and "/run/nvidia/validations/vfio-pci-ready" in gate["args"][0]
    assert gate["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    ctr = container(ds, "nvidia-kata-sandbox-device-plugin-ctr")
    assert ctr["image"] == "nvcr.io/nvidia/cloud-native/nvidia-sandbox-device-plugin:v0.0.5"
    assert env_of(ctr) == {
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "POD_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "POD_SERVICE_ACCOUNT": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.serviceAccountName"}},
    }
    assert ctr["securityContext"] == {"privileged": True}
    assert mounts(ctr) == {"device-plugin": "/var/lib/kubelet/device-plugins", "cdi-root": "/var/run/cdi"}
    assert volume_paths(ds) == {
        "device-plugin": "/var/lib/kubelet/device-plugins",
        "run-nvidia-validations": "/run/nvidia/validations",
        "cdi-root": "/var/run/cdi",
    }


def test_gate_uses_the_agents_image_when_one_is_configured() -> None:
    ds = find(render_operand(kata_sandbox_device_plugin.render, with_agents(KATA)), "DaemonSet")
    assert container(ds, "vfio-pci-validation")["image"] == AGENTS_IMAGE
    ds = find(render_operand(kata_sandbox_device_plugin.render, KATA), "DaemonSet")
    assert container(ds, "vfio-pci-validation")["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"


def test_user_settings() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}, "kataSandboxDevicePlugin": {
        "repository": "registry.example.com", "image": "kata-dp", "version": "v9",
        "env": [{"name": "P_GPU_ALIAS", "value": "pgpu"}], "resources": {"requests": {"cpu": "50m"}},
    }}}
    ctr = container(find(render_operand(kata_sandbox_device_plugin.render, document), "DaemonSet"),
                    "nvidia-kata-sandbox-device-plugin-ctr")
    assert ctr["image"] == "registry.example.com/kata-dp:v9"
    assert env_of(ctr)["P_GPU_ALIAS"] == "pgpu"
    assert ctr["resources"] == {"requests": {"cpu": "50m"}}
