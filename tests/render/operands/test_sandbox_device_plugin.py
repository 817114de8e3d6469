"""state-sandbox-device-plugin (KubeVirt) against reference/gpu-operator.md §3.12 and upstream assets (v26)."""

from __future__ import annotations

from gpu_operator.render.operands import sandbox_device_plugin
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

KUBEVIRT = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kubevirt"}}}
NVIDIA = {**KUBEVIRT, "agents": {"implementation": "nvidia"}}


def test_absent_without_sandbox_in_kata_mode_or_when_disabled() -> None:
    assert render_operand(sandbox_device_plugin.render) == []
    kata = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}}
    assert render_operand(sandbox_device_plugin.render, kata) == []
    disabled = {"operator": {"sandboxWorkloads": {"enabled": True}, "sandboxDevicePlugin": {"enabled": False}}}
    assert render_operand(sandbox_device_plugin.render, disabled) == []


def test_kubevirt_is_the_default_mode() -> None:
    assert render_operand(sandbox_device_plugin.render, {"operator": {"sandboxWorkloads": {"enabled": True}}})


def test_objects_and_rbac() -> None:
    objects = render_operand(sandbox_device_plugin.render, KUBEVIRT)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-sandbox-device-plugin"),
        ("Role", "nvidia-sandbox-device-plugin"),
        ("RoleBinding", "nvidia-sandbox-device-plugin"),
        ("ClusterRole", "nvidia-sandbox-device-plugin"),
        ("ClusterRoleBinding", "nvidia-sandbox-device-plugin"),
        ("DaemonSet", "nvidia-sandbox-device-plugin-daemonset"),
    ]
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete"]},
        {"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"],
         "verbs": ["create", "get", "list", "watch", "update"]},
    ]
    assert find(objects, "ClusterRole")["rules"] == [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get"]}]
    assert find(objects, "RoleBinding")["roleRef"]["name"] == "nvidia-sandbox-device-plugin"
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(sandbox_device_plugin.render, NVIDIA), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-sandbox-device-plugin-daemonset"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.sandbox-device-plugin": "true"}
    assert pod["serviceAccountName"] == "nvidia-sandbox-device-plugin"
    assert "runtimeClassName" not in pod
    assert init_names(ds) == ["vfio-pci-validation", "vgpu-devices-validation"]
    ctr = container(ds, "nvidia-sandbox-device-plugin-ctr")
    assert ctr["image"] == "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.6.0"
    assert "command" not in ctr
    assert ctr["securityContext"] == {"privileged": True}
    assert mounts(ctr) == {
        "device-plugin": "/var/lib/kubelet/device-plugins", "vfio": "/dev/vfio", "cdi-root": "/var/run/cdi",
    }
    assert volume_paths(ds) == {
        "device-plugin": "/var/lib/kubelet/device-plugins",
        "run-nvidia-validations": "/run/nvidia/validations",
        "vfio": "/dev/vfio",
        "cdi-root": "/var/run/cdi",
    }


def test_gates_only_wait_on_their_own_node_role() -> None:
    ds = find(render_operand(sandbox_device_plugin.render, NVIDIA), "DaemonSet")
    vfio, vgpu = (container(ds, name) for name in init_names(ds))
    assert '"vm-passthrough"' in vfio["args"][0] and "/run/nvidia/validations/vfio-pci-ready" in vfio["args"][0]
    assert '"vm-vgpu"' in vgpu["args"][0] and "/run/nvidia/validations/vgpu-devices-ready" in vgpu["args"][0]
    for gate in (vfio, vgpu):
        assert "/run/nvidia/validations/workload-type" in gate["args"][0]
        assert gate["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
        assert env_of(gate) == {"NVIDIA_VISIBLE_DEVICES": "void"}
        assert gate["securityContext"] == {"privileged": True, "runAsUser": 0}
        assert gate["volumeMounts"] == [
            {
                "name": "run-nvidia-validations",
                "mountPath": "/run/nvidia/validations",
                "mountPropagation": "HostToContainer",
            }
        ]


def test_user_settings() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True}, "sandboxDevicePlugin": {
        "args": ["-v=4"], "env": [{"name": "P_GPU_ALIAS", "value": "gpu"}], "imagePullSecrets": ["ngc"],
    }}}
    ds = find(render_operand(sandbox_device_plugin.render, document), "DaemonSet")
    ctr = container(ds, "nvidia-sandbox-device-plugin-ctr")
    assert ctr["args"] == ["-v=4"]
    assert env_of(ctr) == {"P_GPU_ALIAS": "gpu"}
    assert {"name": "ngc"} in pod_of(ds)["imagePullSecrets"]
