"""state-vgpu-manager against reference/gpu-operator.md §2, §3.12, §4.2 and upstream assets/state-vgpu-manager."""

from __future__ import annotations

from gpu_operator.render.operands import vgpu_manager
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

VGPU = {"enabled": True, "repository": "registry.example.com/nvidia", "version": "550.90.05"}
ENABLED = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}, "vgpuManager": VGPU}}
NVIDIA = {**ENABLED, "agents": {"implementation": "nvidia"}}
TWO_OSES = {
    **ENABLED,
    "cluster": {"operatingSystems": [{"id": "ubuntu", "versionId": "22.04"}, {"id": "rhel", "versionId": "9.4"}]},
}


def _with_vgpu(**fields: object) -> dict:
    return {"operator": {"sandboxWorkloads": {"enabled": True}, "vgpuManager": {**VGPU, **fields}}}


def test_absent_without_sandbox_or_when_disabled() -> None:
    assert render_operand(vgpu_manager.render, {"operator": {"vgpuManager": VGPU}}) == []
    assert render_operand(vgpu_manager.render, {"operator": {"sandboxWorkloads": {"enabled": True}}}) == []


def test_objects_in_upstream_order_without_the_scc_role() -> None:
    objects = render_operand(vgpu_manager.render, ENABLED)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-vgpu-manager"),
        ("ClusterRole", "nvidia-vgpu-manager"),
        ("ClusterRoleBinding", "nvidia-vgpu-manager"),
        ("DaemonSet", "nvidia-vgpu-manager-daemonset"),
    ]
    assert_valid(objects)


def test_cluster_role_lets_the_driver_manager_pause_and_evict() -> None:
    rules = find(render_operand(vgpu_manager.render, ENABLED), "ClusterRole")["rules"]
    assert rules == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
    ]
    binding = find(render_operand(vgpu_manager.render, ENABLED), "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-vgpu-manager", "namespace": "gpu-operator"}
    ]


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(vgpu_manager.render, ENABLED), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-vgpu-manager-daemonset"}
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "nvidia-vgpu-manager-ctr"
    }
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.vgpu-manager": "true"}
    assert pod["serviceAccountName"] == "nvidia-vgpu-manager"
    assert pod["hostPID"] is True and pod["hostIPC"] is True
    assert "runtimeClassName" not in pod
    assert pod["priorityClassName"] == "system-node-critical"
    assert init_names(ds) == ["k8s-driver-manager"]
    ctr = container(ds, "nvidia-vgpu-manager-ctr")
    assert ctr["image"] == "registry.example.com/nvidia/vgpu-manager:550.90.05-ubuntu22.04"
    assert ctr["imagePullPolicy"] == "IfNotPresent"
    assert (ctr["command"], ctr["args"]) == (["nvidia-driver"], ["init"])
    assert ctr["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}}
    assert mounts(ctr) == {
        "run-nvidia": "/run/nvidia",
        "host-os-release": "/host-etc/os-release",
        "vfio": "/dev/vfio",
        "cgroup": "/sys/fs/cgroup",
        "var-log": "/var/log",
        "dev-log": "/dev/log",
        "firmware-search-path": "/sys/module/firmware_class/parameters/path",
        "nv-firmware": "/lib/firmware",
    }
    assert volume_paths(ds) == {
        "run-nvidia": "/run/nvidia",
        "host-os-release": "/etc/os-release",
        "cgroup": "/sys/fs/cgroup",
        "vfio": "/dev/vfio",
        "host-root": "/",
        "host-sys": "/sys",
        "var-log": "/var/log",
        "dev-log": "/dev/log",
        "firmware-search-path": "/sys/module/firmware_class/parameters/path",
        "nv-firmware": "/run/nvidia/driver/lib/firmware",
    }


def test_driver_manager_never_evicts_or_drains() -> None:
    ds = find(render_operand(vgpu_manager.render, NVIDIA), "DaemonSet")
    init = container(ds, "k8s-driver-manager")
    assert init["image"] == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert (init["command"], init["args"]) == (["driver-manager"], ["uninstall_driver"])
    values = env_of(init)
    assert values["ENABLE_GPU_POD_EVICTION"] == "false"
    assert values["ENABLE_AUTO_DRAIN"] == "false"
    assert values["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert values["OPERATOR_NAMESPACE"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
    assert mounts(init) == {"run-nvidia": "/run/nvidia", "host-root": "/host", "host-sys": "/sys"}


def test_driver_manager_runs_our_agent_with_an_agents_image() -> None:
    init = container(find(render_operand(vgpu_manager.render, with_agents(ENABLED)), "DaemonSet"), "k8s-driver-manager")
    assert init["command"] == ["gpu-operator-agent", "driver-manager"]
    assert init["args"] == ["uninstall_driver"]
    assert init["image"] == AGENTS_IMAGE


def test_driver_manager_env_from_its_sub_spec() -> None:
    document = _with_vgpu(driverManager={"env": [{"name": "ENABLE_AUTO_DRAIN", "value": "true"}]})
    init = container(find(render_operand(vgpu_manager.render, document), "DaemonSet"), "k8s-driver-manager")
    assert env_of(init)["ENABLE_AUTO_DRAIN"] == "true"


def test_one_daemonset_per_node_os_with_os_selectors_and_tags() -> None:
    objects = render_operand(vgpu_manager.render, TWO_OSES)
    daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
    assert [ds["metadata"]["name"] for ds in daemonsets] == [
        "nvidia-vgpu-manager-daemonset-ubuntu22.04",
        "nvidia-vgpu-manager-daemonset-rhel9",
    ]
    ubuntu, rhel = daemonsets
    assert pod_of(rhel)["nodeSelector"] == {
        "nvidia.com/gpu.deploy.vgpu-manager": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "rhel",
        # the rhel9 tag covers every 9.x release, so the pool matches the major version
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "9",
    }
    assert pod_of(ubuntu)["nodeSelector"]["feature.node.kubernetes.io/system-os_release.VERSION_ID"] == "22.04"
    rhel_image = container(rhel, "nvidia-vgpu-manager-ctr")["image"]
    assert rhel_image == "registry.example.com/nvidia/vgpu-manager:550.90.05-rhel9"
    assert container(ubuntu, "nvidia-vgpu-manager-ctr")["image"].endswith(":550.90.05-ubuntu22.04")
    assert rhel["spec"]["selector"]["matchLabels"] == {"app": "nvidia-vgpu-manager-daemonset-rhel9"}
    assert [o["kind"] for o in objects].count("ServiceAccount") == 1
    assert_valid(objects)


def test_digest_gets_no_os_suffix() -> None:
    digest = "sha256:" + "a" * 64
    ds = find(render_operand(vgpu_manager.render, _with_vgpu(version=digest)), "DaemonSet")
    assert container(ds, "nvidia-vgpu-manager-ctr")["image"] == f"registry.example.com/nvidia/vgpu-manager@{digest}"


def test_kernel_module_config_is_mounted_under_drivers() -> None:
    ds = find(render_operand(vgpu_manager.render, _with_vgpu(kernelModuleConfig={"name": "vgpu-modules"})), "DaemonSet")
    ctr = container(ds, "nvidia-vgpu-manager-ctr")
    assert {"name": "kernel-module-config", "mountPath": "/drivers/nvidia.conf", "readOnly": True,
            "subPath": "nvidia.conf"} in ctr["volumeMounts"]
    assert {"name": "kernel-module-config",
            "configMap": {"name": "vgpu-modules", "items": [{"key": "nvidia.conf", "path": "nvidia.conf"}]}} in (
        pod_of(ds)["volumes"]
    )
    plain = find(render_operand(vgpu_manager.render, ENABLED), "DaemonSet")
    assert "kernel-module-config" not in mounts(container(plain, "nvidia-vgpu-manager-ctr"))


def test_user_settings_reach_the_manager_container() -> None:
    document = _with_vgpu(
        env=[{"name": "DRIVER_DEBUG", "value": "1"}], args=["init", "--debug"], imagePullPolicy="Always",
        imagePullSecrets=["vgpu-registry"], resources={"limits": {"memory": "2Gi"}},
        driverManager={"imagePullSecrets": ["ngc"]},
    )
    ds = find(render_operand(vgpu_manager.render, {**document, "agents": {"implementation": "nvidia"}}), "DaemonSet")
    ctr = container(ds, "nvidia-vgpu-manager-ctr")
    assert env_of(ctr) == {"DRIVER_DEBUG": "1"}
    assert ctr["args"] == ["init", "--debug"]
    assert ctr["imagePullPolicy"] == "Always"
    assert ctr["resources"] == {"limits": {"memory": "2Gi"}}
    assert pod_of(ds)["imagePullSecrets"] == [{"name": "ngc"}, {"name": "vgpu-registry"}]
    assert_valid([ds])


def test_driver_unload_gets_two_minutes() -> None:
    """NVIDIA's assets/state-vgpu-manager/0500_daemonset.yaml gives the pod `terminationGracePeriodSeconds: 120`,
    so unloading the vGPU manager driver is not cut off by the default 30 s."""
    for document in (NVIDIA, TWO_OSES):
        for ds in (o for o in render_operand(vgpu_manager.render, document) if o["kind"] == "DaemonSet"):
            assert pod_of(ds)["terminationGracePeriodSeconds"] == 120
