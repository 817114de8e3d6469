"""state-vfio-manager against reference/gpu-operator.md §2, §3.12 and upstream assets/state-vfio-manager (v26)."""

from __future__ import annotations

from gpu_operator.render.operands import vfio_manager
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
from tests.support.agents import with_agents

ENABLED = {"operator": {"sandboxWorkloads": {"enabled": True}}}
NVIDIA = {**ENABLED, "agents": {"implementation": "nvidia"}}


def _daemonset(document: dict) -> dict:
    return find(render_operand(vfio_manager.render, document), "DaemonSet")


def test_absent_without_sandbox_or_when_disabled() -> None:
    assert render_operand(vfio_manager.render) == []
    disabled = {"operator": {"sandboxWorkloads": {"enabled": True}, "vfioManager": {"enabled": False}}}
    assert render_operand(vfio_manager.render, disabled) == []


def test_objects_in_upstream_order_without_the_scc_role() -> None:
    objects = render_operand(vfio_manager.render, ENABLED)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-vfio-manager"),
        ("ClusterRole", "nvidia-vfio-manager"),
        ("ClusterRoleBinding", "nvidia-vfio-manager"),
        ("DaemonSet", "nvidia-vfio-manager"),
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    ]
    assert_valid(objects)


def test_pods_are_selected_by_name_and_the_daemonset_labelled_app() -> None:
    ds = _daemonset(ENABLED)
    assert ds["spec"]["selector"]["matchLabels"] == {"name": "nvidia-vfio-manager"}
    assert ds["spec"]["template"]["metadata"]["labels"] == {"name": "nvidia-vfio-manager"}
    assert ds["metadata"]["labels"]["app"] == "nvidia-vfio-manager"
    assert "name" not in ds["metadata"]["labels"]


def test_daemonset_matches_upstream() -> None:
    ds = _daemonset(NVIDIA)
    pod = pod_of(ds)
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.vfio-manager": "true"}
    assert pod["serviceAccountName"] == "nvidia-vfio-manager"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert "runtimeClassName" not in pod
    assert init_names(ds) == ["k8s-driver-manager"]
    ctr = container(ds, "nvidia-vfio-manager")
    assert ctr["image"] == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert ctr["command"] == ["sh", "-c"]
    assert ctr["args"][0].startswith("vfio-manage bind --all && ")
    assert ctr["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sh", "-c", "vfio-manage unbind --all"]
    assert env_of(ctr) == {"HOST_ROOT": "/host"}
    assert ctr["resources"] == {"limits": {"memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}
    assert ctr["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}}
    assert mounts(ctr) == {"host-sys": "/sys", "host-lib-modules": "/lib/modules", "host-root": "/host"}
    assert {"name": "host-lib-modules", "mountPath": "/lib/modules", "readOnly": True} in ctr["volumeMounts"]
    assert volume_paths(ds) == {
        "host-sys": "/sys", "host-lib-modules": "/lib/modules", "run-nvidia": "/run/nvidia", "host-root": "/",
    }


def test_driver_manager_unbinds_without_eviction_or_drain() -> None:
    init = container(_daemonset(NVIDIA), "k8s-driver-manager")
    assert init["image"] == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert (init["command"], init["args"]) == (["driver-manager"], ["uninstall_driver"])
    values = env_of(init)
    assert (values["ENABLE_GPU_POD_EVICTION"], values["ENABLE_AUTO_DRAIN"]) == ("false", "false")
    assert mounts(init) == {"run-nvidia": "/run/nvidia", "host-root": "/host", "host-sys": "/sys"}
    agent_init = container(_daemonset(with_agents(ENABLED)), "k8s-driver-manager")
    assert agent_init["command"] == ["gpu-operator-agent", "driver-manager"]


def test_user_settings() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True}, "vfioManager": {
        "env": [{"name": "BIND_NVSWITCHES", "value": "true"}], "resources": {"limits": {"memory": "1Gi"}},
        "imagePullSecrets": ["ngc"], "driverManager": {"imagePullSecrets": ["dm"]},
    }}, "agents": {"implementation": "nvidia"}}
    ds = _daemonset(document)
    ctr = container(ds, "nvidia-vfio-manager")
    assert env_of(ctr) == {"HOST_ROOT": "/host", "BIND_NVSWITCHES": "true"}
    assert ctr["resources"] == {"limits": {"memory": "1Gi"}}
    assert pod_of(ds)["imagePullSecrets"] == [{"name": "dm"}, {"name": "ngc"}]


def test_custom_root_fs_moves_host_root() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True}, "hostPaths": {"rootFS": "/host-fs"}}}
    ds = _daemonset(document)
    assert volume_paths(ds)["host-root"] == "/host-fs"
    assert env_of(container(ds, "nvidia-vfio-manager"))["HOST_ROOT"] == "/host-fs"


def test_driver_manager_keeps_its_own_pull_policy_beside_the_vfio_managers() -> None:
    """NVIDIA's TransformVFIOManager sets the vfio manager container's pull policy and the driver manager's from
    `driverManager`; the two default to the same image, so matching containers by image must not merge them."""
    document = {"operator": {
        "sandboxWorkloads": {"enabled": True},
        "vfioManager": {"imagePullPolicy": "Always", "driverManager": {"imagePullPolicy": "Never"}},
    }}
    ds = _daemonset(document)
    assert container(ds, "nvidia-vfio-manager")["imagePullPolicy"] == "Always"
    assert container(ds, "k8s-driver-manager")["imagePullPolicy"] == "Never"
