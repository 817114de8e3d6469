"""state-driver against reference/gpu-operator.md §2, §3.1, §4, §5.2 and upstream assets/state-driver."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from gpu_operator.config import ConfigError
import yaml

from gpu_operator.render.operands import driver
from gpu_operator.render.operands.driver_digest import config_digest
from gpu_operator.render.operands.driver_pools import sanitized_kernel
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
from tests.support.reference import reference_file

DIGEST = "sha256:" + "ab" * 32
UBUNTU = {"id": "ubuntu", "versionId": "22.04"}
RHEL = {"id": "rhel", "versionId": "9.4"}


#: a driver image repository of the user's own: NVIDIA publishes driver images for ubuntu, rhel and rocky only
OWN_DRIVERS = "registry.example.com/drivers"


def _doc(driver_spec: dict | None = None, *, systems: list[dict] | None = None, **sections: object) -> dict:
    operator = {"driver": driver_spec or {}, **sections}
    document: dict = {"operator": operator}
    if systems is not None:
        document["cluster"] = {"operatingSystems": systems}
    return document


def _daemonsets(document: dict | None = None) -> list[dict]:
    objects = render_operand(driver.render, document)
    assert_valid(objects)
    return [o for o in objects if o["kind"] == "DaemonSet"]


def _ds(document: dict | None = None) -> dict:
    (ds,) = _daemonsets(document)
    return ds


def _names(ds: dict) -> list[str]:
    return [c["name"] for c in pod_of(ds)["containers"]]


def _mount(item: dict, name: str) -> dict:
    return next(m for m in item["volumeMounts"] if m["name"] == name)


def _volume(ds: dict, name: str) -> dict:
    return next(v for v in pod_of(ds)["volumes"] if v["name"] == name)


# --- objects and RBAC --------------------------------------------------------------------------------------


def test_disabled_renders_nothing() -> None:
    assert render_operand(driver.render, _doc({"enabled": False})) == []


def test_objects_in_upstream_order_without_scc_role() -> None:
    objects = render_operand(driver.render)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-driver"),
        ("ClusterRole", "nvidia-driver"),
        ("ClusterRoleBinding", "nvidia-driver"),
        ("ConfigMap", "nvidia-driver-startup-probe"),
        ("DaemonSet", "nvidia-driver-daemonset"),
    ]
    assert_valid(objects)


def test_cluster_role_keeps_every_rule_but_openshift_clusterversions() -> None:
    objects = render_operand(driver.render)
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "update", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list"]},
    ]
    binding = find(objects, "ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nvidia-driver"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "nvidia-driver", "namespace": "gpu-operator"}]


def test_startup_probe_config_map_carries_our_script() -> None:
    cm = find(render_operand(driver.render), "ConfigMap")
    assert cm["metadata"]["labels"]["app"] == "nvidia-driver-daemonset"
    assert cm["metadata"]["labels"]["app.kubernetes.io/component"] == "nvidia-driver"
    script = cm["data"]["startup-probe.sh"]
    assert script == driver.startup_probe_script()
    for fact in ("/sys/module/nvidia/refcnt", ".driver-daemons-status", "nvidia-smi", ".driver-ctr-ready", "mv -f"):
        assert fact in script


# --- the default DaemonSet ------------------------------------------------------------------------------


def test_daemonset_metadata_and_scheduling_match_upstream() -> None:
    ds = _ds()
    pod = pod_of(ds)
    labels = {"app": "nvidia-driver-daemonset", "nvidia.com/precompiled": "false", "app.kubernetes.io/component": "nvidia-driver"}
    assert ds["metadata"]["labels"] == {**labels, "app.kubernetes.io/managed-by": "pulumi-gpu-operator"}
    assert ds["spec"]["template"]["metadata"]["labels"] == labels
    assert ds["spec"]["template"]["metadata"]["annotations"] == {"kubectl.kubernetes.io/default-container": "nvidia-driver-ctr"}
    assert ds["spec"]["selector"] == {"matchLabels": {"app": "nvidia-driver-daemonset"}}
    # no operator controller runs NVIDIA's images alone: the DaemonSet rolls a new driver itself (driver_update)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.driver": "true"}
    assert pod["serviceAccountName"] == "nvidia-driver"
    assert pod["hostPID"] is True
    assert "runtimeClassName" not in pod
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["affinity"] == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchExpressions": [
            {"key": "app.kubernetes.io/component", "operator": "In", "values": ["nvidia-driver"]},
        ]},
        "topologyKey": "kubernetes.io/hostname",
    }]}}
    assert init_names(ds) == ["k8s-driver-manager"]
    assert _names(ds) == ["nvidia-driver-ctr"]
    assert "imagePullSecrets" not in pod


def test_on_delete_under_the_controller_even_when_operands_roll() -> None:
    """NVIDIA's driver DaemonSet is always OnDelete (object_controls.go preProcessDaemonSet skips it): the upgrade
    controller replaces its pods; so is ours whenever our controller runs, whatever `daemonsets.updateStrategy`."""
    rolling = _doc(daemonsets={"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "3"}})
    ds = _ds(with_agents(rolling))
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_host_paths_match_reference() -> None:
    ds = _ds()
    assert volume_paths(ds) == {
        "run-nvidia": "/run/nvidia",
        "var-log": "/var/log",
        "dev-log": "/dev/log",
        "host-os-release": "/etc/os-release",
        "run-nvidia-fabricmanager": "/run/nvidia-fabricmanager",
        "run-nvidia-topologyd": "/run/nvidia-topologyd",
        "mlnx-ofed-usr-src": "/run/mellanox/drivers/usr/src",
        "run-mellanox-drivers": "/run/mellanox/drivers",
        "run-nvidia-validations": "/run/nvidia/validations",
        "host-root": "/",
        "host-sys": "/sys",
        "firmware-search-path": "/sys/module/firmware_class/parameters/path",
        "host-sys-devices-system": "/sys/devices/system",
        "nv-firmware": "/run/nvidia/driver/lib/firmware",
    }
    assert _volume(ds, "run-nvidia")["hostPath"]["type"] == "DirectoryOrCreate"
    assert _volume(ds, "host-sys")["hostPath"]["type"] == "Directory"
    assert _volume(ds, "driver-startup-probe-script")["configMap"] == {
        "name": "nvidia-driver-startup-probe", "defaultMode": 0o755,
    }


def test_driver_container_matches_upstream() -> None:
    ctr = container(_ds(), "nvidia-driver-ctr")
    assert ctr["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert ctr["imagePullPolicy"] == "IfNotPresent"
    assert ctr["command"] == ["nvidia-driver"]
    assert ctr["args"] == ["init"]
    assert ctr["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}}
    variables = env_of(ctr)
    assert variables["NODE_NAME"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}
    assert variables["NODE_IP"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.hostIP"}}
    assert variables["KERNEL_MODULE_TYPE"] == "auto"
    assert len(variables["DRIVER_CONFIG_DIGEST"]) == 64
    for absent in ("OPEN_KERNEL_MODULES_ENABLED", "GDS_ENABLED", "GDRCOPY_ENABLED", "GPU_DIRECT_RDMA_ENABLED", "USE_HOST_MOFED"):
        assert absent not in variables
    assert mounts(ctr) == {
        "run-nvidia": "/run/nvidia",
        "run-nvidia-fabricmanager": "/run/nvidia-fabricmanager",
        "run-nvidia-topologyd": "/run/nvidia-topologyd",
        "var-log": "/var/log",
        "dev-log": "/dev/log",
        "host-os-release": "/host-etc/os-release",
        "mlnx-ofed-usr-src": "/run/mellanox/drivers/usr/src",
        "run-mellanox-drivers": "/run/mellanox/drivers",
        "host-sys-devices-system": "/sys/devices/system",
        "firmware-search-path": "/sys/module/firmware_class/parameters/path",
        "nv-firmware": "/lib/firmware",
        "driver-startup-probe-script": "/usr/local/bin/startup-probe.sh",
    }
    assert _mount(ctr, "run-nvidia")["mountPropagation"] == "Bidirectional"
    assert _mount(ctr, "mlnx-ofed-usr-src")["mountPropagation"] == "HostToContainer"
    assert _mount(ctr, "run-mellanox-drivers")["mountPropagation"] == "HostToContainer"
    assert _mount(ctr, "host-os-release")["readOnly"] is True
    assert _mount(ctr, "driver-startup-probe-script")["subPath"] == "startup-probe.sh"
    assert ctr["startupProbe"] == {
        "exec": {"command": ["sh", "/usr/local/bin/startup-probe.sh"]},
        "initialDelaySeconds": 60, "failureThreshold": 120, "successThreshold": 1, "periodSeconds": 10,
        "timeoutSeconds": 60,
    }
    assert "livenessProbe" not in ctr and "readinessProbe" not in ctr
    assert ctr["lifecycle"]["preStop"]["exec"]["command"] == [
        "/bin/sh", "-c",
        "rm -f /run/nvidia/validations/.driver-ctr-ready /run/nvidia/validations/.driver-daemons-status",
    ]


def test_driver_manager_init_carries_reference_env_and_the_digest() -> None:
    ds = _ds()
    manager = container(ds, "k8s-driver-manager")
    variables = env_of(manager)
    assert [e["name"] for e in manager["env"]] == [
        "NODE_NAME", "NVIDIA_VISIBLE_DEVICES", "ENABLE_GPU_POD_EVICTION", "ENABLE_AUTO_DRAIN", "DRAIN_USE_FORCE",
        "DRAIN_POD_SELECTOR_LABEL", "DRAIN_TIMEOUT_SECONDS", "DRAIN_DELETE_EMPTYDIR_DATA", "OPERATOR_NAMESPACE",
        "DRIVER_CONFIG_DIGEST",
    ]
    assert variables["ENABLE_GPU_POD_EVICTION"] == "true"
    assert variables["ENABLE_AUTO_DRAIN"] == "false"
    assert variables["DRIVER_CONFIG_DIGEST"] == env_of(container(ds, "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"]
    assert mounts(manager) == {"run-nvidia": "/run/nvidia", "host-root": "/host", "host-sys": "/sys",
                               "run-mellanox-drivers": "/run/mellanox/drivers"}


def test_driver_manager_agent_or_nvidia() -> None:
    agent = container(_ds(with_agents()), "k8s-driver-manager")
    assert agent["image"] == AGENTS_IMAGE
    assert agent["command"] == ["gpu-operator-agent", "driver-manager"]
    assert agent["args"] == ["uninstall_driver"]
    # unloading kernel modules keeps it privileged; root is explicit because the agents image's user is not
    assert agent["securityContext"] == {"privileged": True, "runAsUser": 0}
    nvidia = _ds({"agents": {"implementation": "nvidia"}})
    manager = container(nvidia, "k8s-driver-manager")
    assert manager["securityContext"] == {"privileged": True}
    assert manager["image"] == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert manager["command"] == ["driver-manager"]
    assert manager["args"] == ["uninstall_driver"]
    assert env_of(manager)["DRIVER_CONFIG_DIGEST"] != env_of(agent)["DRIVER_CONFIG_DIGEST"]


def test_pull_secrets_join_manager_driver_and_sidecars_in_order() -> None:
    document = {
        "agents": {"implementation": "nvidia"},
        "operator": {
            "driver": {"imagePullSecrets": ["drv", "shared"], "manager": {"imagePullSecrets": ["mgr", "shared"]}},
            "gds": {"enabled": True, "imagePullSecrets": ["gds"]},
            "gdrcopy": {"enabled": True, "imagePullSecrets": ["gdr"]},
        },
    }
    assert pod_of(_ds(document))["imagePullSecrets"] == [
        {"name": "mgr"}, {"name": "shared"}, {"name": "drv"}, {"name": "gds"}, {"name": "gdr"},
    ]
    agents = _ds(with_agents({"agents": {"image": {"pullSecrets": ["agents"]}},
                              "operator": {"driver": {"imagePullSecrets": ["drv"]}}}))
    assert pod_of(agents)["imagePullSecrets"] == [{"name": "agents"}, {"name": "drv"}]


def test_images_and_probe_follow_the_v26_7_chart_values() -> None:
    values = yaml.safe_load(reference_file("helm-values/gpu-operator-v26.7.0-values.yaml").read_text())
    chart = values["driver"]
    ds = _ds({"agents": {"implementation": "nvidia"}, "operator": {"gds": {"enabled": True}, "gdrcopy": {"enabled": True}}})
    assert container(ds, "nvidia-driver-ctr")["image"] == (
        f"{chart['repository']}/{chart['image']}:{chart['version']}-ubuntu22.04"
    )
    manager = chart["manager"]
    assert container(ds, "k8s-driver-manager")["image"] == f"{manager['repository']}/{manager['image']}:{manager['version']}"
    for name, section in (("nvidia-fs-ctr", values["gds"]), ("nvidia-gdrcopy-ctr", values["gdrcopy"])):
        expected = f"{section['repository']}/{section['image']}:{section['version']}-ubuntu22.04"
        assert container(ds, name)["image"] == expected
    probe = container(ds, "nvidia-driver-ctr")["startupProbe"]
    assert {key: probe[key] for key in chart["startupProbe"]} == chart["startupProbe"]


# --- switches ------------------------------------------------------------------------------------------


def test_rdma_adds_peermem_sidecar_and_flags() -> None:
    ds = _ds(_doc({"rdma": {"enabled": True}, "imagePullPolicy": "Always"}))
    assert _names(ds) == ["nvidia-driver-ctr", "nvidia-peermem-ctr"]
    peermem = container(ds, "nvidia-peermem-ctr")
    assert peermem["image"] == container(ds, "nvidia-driver-ctr")["image"]
    assert peermem["imagePullPolicy"] == "Always"
    assert peermem["command"] == ["nvidia-driver"]
    assert peermem["args"] == ["reload_nvidia_peermem"]
    assert peermem["securityContext"]["privileged"] is True
    assert mounts(peermem) == {"run-nvidia": "/run/nvidia", "var-log": "/var/log", "dev-log": "/dev/log",
                               "run-mellanox-drivers": "/run/mellanox/drivers"}
    probe = ["sh", "-c", "nvidia-driver probe_nvidia_peermem"]
    assert peermem["startupProbe"]["exec"]["command"] == probe
    assert peermem["livenessProbe"] == {"exec": {"command": probe}, "initialDelaySeconds": 30, "failureThreshold": 1,
                                        "successThreshold": 1, "periodSeconds": 30, "timeoutSeconds": 10}
    assert "env" not in peermem
    assert env_of(container(ds, "nvidia-driver-ctr"))["GPU_DIRECT_RDMA_ENABLED"] == "true"
    assert env_of(container(ds, "k8s-driver-manager"))["GPU_DIRECT_RDMA_ENABLED"] == "true"
    assert "USE_HOST_MOFED" not in env_of(container(ds, "nvidia-driver-ctr"))
    assert volume_paths(ds)["mlnx-ofed-usr-src"] == "/run/mellanox/drivers/usr/src"


def test_rdma_with_host_mofed_builds_against_host_sources() -> None:
    ds = _ds(_doc({"rdma": {"enabled": True, "useHostMofed": True}}))
    assert volume_paths(ds)["mlnx-ofed-usr-src"] == "/usr/src"
    for name in ("nvidia-driver-ctr", "k8s-driver-manager", "nvidia-peermem-ctr"):
        assert env_of(container(ds, name))["USE_HOST_MOFED"] == "true"
    manager_env = [e["name"] for e in container(ds, "k8s-driver-manager")["env"]]
    assert manager_env.index("GPU_DIRECT_RDMA_ENABLED") < manager_env.index("USE_HOST_MOFED")


def test_host_mofed_without_rdma_changes_nothing() -> None:
    ds = _ds(_doc({"rdma": {"useHostMofed": True}}))
    assert volume_paths(ds)["mlnx-ofed-usr-src"] == "/run/mellanox/drivers/usr/src"
    assert "USE_HOST_MOFED" not in env_of(container(ds, "k8s-driver-manager"))


def test_gds_adds_nvidia_fs_sidecar() -> None:
    ds = _ds(_doc(gds={"enabled": True, "env": [{"name": "NVFS_MAX_PEER_DEVS", "value": "64"}]}))
    assert _names(ds) == ["nvidia-driver-ctr", "nvidia-fs-ctr"]
    fs = container(ds, "nvidia-fs-ctr")
    assert fs["image"] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu22.04"
    assert fs["command"] == ["bash", "-xc"]
    assert "/run/nvidia/driver/usr/src" in fs["args"][0]
    assert fs["args"][0].endswith("exec nvidia-gds-driver install")
    assert fs["startupProbe"]["exec"]["command"] == ["sh", "-c", "lsmod | grep nvidia_fs"]
    assert _mount(fs, "run-nvidia")["mountPropagation"] == "HostToContainer"
    assert env_of(fs) == {"NVFS_MAX_PEER_DEVS": "64"}
    assert env_of(container(ds, "nvidia-driver-ctr"))["GDS_ENABLED"] == "true"


def test_gdrcopy_adds_gdrcopy_sidecar() -> None:
    ds = _ds(_doc(gdrcopy={"enabled": True}))
    assert _names(ds) == ["nvidia-driver-ctr", "nvidia-gdrcopy-ctr"]
    gdr = container(ds, "nvidia-gdrcopy-ctr")
    assert gdr["image"] == "nvcr.io/nvidia/cloud-native/gdrdrv:v2.6-ubuntu22.04"
    assert gdr["args"][0].endswith("exec nvidia-gdrcopy-driver install")
    assert gdr["startupProbe"]["exec"]["command"] == ["sh", "-c", "lsmod | grep gdrdrv"]
    variables = env_of(container(ds, "nvidia-driver-ctr"))
    assert variables["GDRCOPY_ENABLED"] == "true"
    assert "GDS_ENABLED" not in variables


def test_all_sidecars_in_upstream_order() -> None:
    ds = _ds(_doc({"rdma": {"enabled": True}}, gds={"enabled": True}, gdrcopy={"enabled": True}))
    assert _names(ds) == ["nvidia-driver-ctr", "nvidia-peermem-ctr", "nvidia-fs-ctr", "nvidia-gdrcopy-ctr"]
    names = [e["name"] for e in container(ds, "nvidia-driver-ctr")["env"]]
    assert names[2:] == ["KERNEL_MODULE_TYPE", "GDRCOPY_ENABLED", "GDS_ENABLED", "GPU_DIRECT_RDMA_ENABLED",
                         "DRIVER_CONFIG_DIGEST"]


@pytest.mark.parametrize(("kind", "open_flag"), [("open", "true"), ("proprietary", None), ("auto", None)])
def test_kernel_module_type(kind: str, open_flag: str | None) -> None:
    variables = env_of(container(_ds(_doc({"kernelModuleType": kind})), "nvidia-driver-ctr"))
    assert variables["KERNEL_MODULE_TYPE"] == kind
    assert variables.get("OPEN_KERNEL_MODULES_ENABLED") == open_flag


def test_secret_env_reaches_installing_containers() -> None:
    ds = _ds(_doc({"secretEnv": "driver-secrets"}, gds={"enabled": True}))
    expected = [{"secretRef": {"name": "driver-secrets"}}]
    assert container(ds, "nvidia-driver-ctr")["envFrom"] == expected
    assert container(ds, "nvidia-fs-ctr")["envFrom"] == expected
    assert "envFrom" not in container(ds, "k8s-driver-manager")


@pytest.mark.parametrize(("system", "repo_dir", "cert_dir"), [
    (UBUNTU, "/etc/apt/sources.list.d", "/usr/local/share/ca-certificates"),
    (RHEL, "/etc/yum.repos.d", "/etc/pki/ca-trust/extracted/pem"),
    ({"id": "sles", "versionId": "15.6"}, "/etc/zypp/repos.d", "/etc/pki/trust/anchors"),
])
def test_repo_and_cert_config_mount_at_os_paths(system: dict, repo_dir: str, cert_dir: str) -> None:
    document = _doc({"repoConfig": {"configMapName": "repos"}, "certConfig": {"name": "certs"},
                     "repository": OWN_DRIVERS}, systems=[system], gdrcopy={"enabled": True})
    document["configs"] = {"driverRepoConfig": ["custom.repo"], "driverCertConfig": ["ca.crt"]}
    ds = _ds(document)
    assert _volume(ds, "repos")["configMap"] == {"name": "repos", "items": [{"key": "custom.repo", "path": "custom.repo"}]}
    assert _volume(ds, "certs")["configMap"] == {"name": "certs", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    for name in ("nvidia-driver-ctr", "nvidia-gdrcopy-ctr"):
        ctr = container(ds, name)
        assert _mount(ctr, "repos") == {"name": "repos", "mountPath": f"{repo_dir}/custom.repo", "readOnly": True,
                                        "subPath": "custom.repo"}
        assert _mount(ctr, "certs") == {"name": "certs", "mountPath": f"{cert_dir}/ca.crt", "readOnly": True,
                                        "subPath": "ca.crt"}


def test_repo_config_on_an_unmapped_os_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as error:
        render_operand(driver.render, {**_doc({"repoConfig": {"configMapName": "repos"}, "repository": OWN_DRIVERS},
                                              systems=[{"id": "azurelinux", "versionId": "3.0"}]),
                                       "configs": {"driverRepoConfig": ["custom.repo"]}})
    assert [(p.path, p.message.split(" (")[0]) for p in error.value.problems] == [
        ("operator.driver.repoConfig.configMapName", "not supported on azurelinux")
    ]


def test_licensing_from_secret_with_nls_token() -> None:
    ds = _ds(_doc({"licensingConfig": {"secretName": "licensing"}}))
    items = [{"key": "gridd.conf", "path": "gridd.conf"},
             {"key": "client_configuration_token.tok", "path": "client_configuration_token.tok"}]
    assert _volume(ds, "licensing-config") == {"name": "licensing-config", "secret": {"secretName": "licensing", "items": items}}
    ctr_mounts = [m for m in container(ds, "nvidia-driver-ctr")["volumeMounts"] if m["name"] == "licensing-config"]
    assert ctr_mounts == [
        {"name": "licensing-config", "mountPath": "/drivers/gridd.conf", "readOnly": True, "subPath": "gridd.conf"},
        {"name": "licensing-config", "mountPath": "/drivers/ClientConfigToken/client_configuration_token.tok",
         "readOnly": True, "subPath": "client_configuration_token.tok"},
    ]


def test_licensing_from_config_map_without_nls() -> None:
    ds = _ds(_doc({"licensingConfig": {"configMapName": "grid", "nlsEnabled": False}}))
    assert _volume(ds, "licensing-config")["configMap"] == {"name": "grid", "items": [{"key": "gridd.conf", "path": "gridd.conf"}]}
    assert [m["mountPath"] for m in container(ds, "nvidia-driver-ctr")["volumeMounts"]
            if m["name"] == "licensing-config"] == ["/drivers/gridd.conf"]


def test_virtual_topology_config() -> None:
    ds = _ds(_doc({"virtualTopology": {"config": "topology"}}))
    assert _volume(ds, "topology-config")["configMap"] == {
        "name": "topology", "items": [{"key": "nvidia-topologyd.conf", "path": "nvidia-topologyd.conf"}],
    }
    assert _mount(container(ds, "nvidia-driver-ctr"), "topology-config") == {
        "name": "topology-config", "mountPath": "/etc/nvidia/nvidia-topologyd.conf", "readOnly": True,
        "subPath": "nvidia-topologyd.conf",
    }


def test_kernel_module_config_mounts_the_parameter_files() -> None:
    ds = _ds(_doc({"kernelModuleConfig": {"name": "module-params"}, "rdma": {"enabled": True}}))
    volume = _volume(ds, "module-params")["configMap"]
    assert volume["optional"] is True
    assert [item["key"] for item in volume["items"]] == [
        "nvidia.conf", "nvidia-uvm.conf", "nvidia-modeset.conf", "nvidia-peermem.conf",
    ]
    for name in ("nvidia-driver-ctr", "nvidia-peermem-ctr"):
        targets = {m["mountPath"]: m["subPath"] for m in container(ds, name)["volumeMounts"] if m["name"] == "module-params"}
        assert targets["/drivers/nvidia.conf"] == "nvidia.conf"
        assert targets["/drivers/nvidia-peermem.conf"] == "nvidia-peermem.conf"


@pytest.mark.parametrize(("system", "runtime", "expected"), [
    (RHEL, "containerd", {"subscription-config-0": ("/etc/pki/entitlement", "/run/secrets/etc-pki-entitlement"),
                          "subscription-config-1": ("/etc/yum.repos.d/redhat.repo", "/run/secrets/redhat.repo"),
                          "subscription-config-2": ("/etc/rhsm", "/run/secrets/rhsm")}),
    (RHEL, "crio", {}),
    ({"id": "sles", "versionId": "15.6"}, "containerd", {
        "subscription-config-0": ("/etc/SUSEConnect", "/etc/SUSEConnect"),
        "subscription-config-1": ("/etc/zypp/credentials.d", "/etc/zypp/credentials.d")}),
    (UBUNTU, "containerd", {}),
])
def test_subscription_mounts_per_os(system: dict, runtime: str, expected: dict) -> None:
    document = _doc({"repository": OWN_DRIVERS}, systems=[system])
    document["cluster"]["containerRuntime"] = runtime
    ds = _ds(document)
    found = {name: path for name, path in volume_paths(ds).items() if name.startswith("subscription-config")}
    assert found == {name: host for name, (host, _) in expected.items()}
    ctr = mounts(container(ds, "nvidia-driver-ctr"))
    assert {name: ctr[name] for name in expected} == {name: target for name, (_, target) in expected.items()}


# --- OS pools and images -------------------------------------------------------------------------------


def test_several_operating_systems_give_one_daemonset_each() -> None:
    daemonsets = _daemonsets(_doc(systems=[UBUNTU, {"id": "ubuntu", "versionId": "24.04"}, RHEL]))
    assert [ds["metadata"]["name"] for ds in daemonsets] == [
        "nvidia-driver-daemonset-ubuntu22.04", "nvidia-driver-daemonset-ubuntu24.04", "nvidia-driver-daemonset-rhel9",
    ]
    selectors = [pod_of(ds)["nodeSelector"] for ds in daemonsets]
    assert selectors[0] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
    }
    assert selectors[2] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "rhel",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "9",
    }
    images = [container(ds, "nvidia-driver-ctr")["image"] for ds in daemonsets]
    assert images == ["nvcr.io/nvidia/driver:595.91.07-ubuntu22.04", "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04",
                      "nvcr.io/nvidia/driver:595.91.07-rhel9"]
    for ds in daemonsets:
        assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
        assert ds["spec"]["selector"] == {"matchLabels": {"app": "nvidia-driver-daemonset"}}
        assert pod_of(ds)["affinity"]["podAntiAffinity"]
    digests = {env_of(container(ds, "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"] for ds in daemonsets}
    assert len(digests) == 3


def test_precompiled_daemonset_per_kernel() -> None:
    systems = [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["5.15.0-1074-azure", "6.8.0-1021-azure"]}]
    daemonsets = _daemonsets(_doc({"usePrecompiled": True}, systems=systems))
    assert [ds["metadata"]["name"] for ds in daemonsets] == [
        "nvidia-driver-daemonset-5.15.0-1074-azure-ubuntu22.04", "nvidia-driver-daemonset-6.8.0-1021-azure-ubuntu22.04",
        "nvidia-driver-daemonset",  # unlisted kernels compile (cluster.unlistedKernels), see test_driver_pools
    ]
    ds = daemonsets[0]
    assert ds["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert ds["spec"]["template"]["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert ds["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-driver-daemonset"
    assert pod_of(ds)["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-1074-azure",
    }
    assert container(ds, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:595.91.07-5.15.0-1074-azure-ubuntu22.04"
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}


def test_precompiled_skips_package_configuration() -> None:
    systems = [{"id": "rhel", "versionId": "9.4", "kernelVersions": ["5.14.0-427.13.1.el9_4.x86_64"]}]
    spec = {"usePrecompiled": True, "repoConfig": {"configMapName": "repos"}, "secretEnv": "creds",
            "kernelModuleConfig": {"name": "params"}}
    document = _doc(spec, systems=systems)
    document["cluster"]["unlistedKernels"] = "none"
    ds = _ds(document)
    assert ds["metadata"]["name"] == "nvidia-driver-daemonset-5.14.0-427.13.1.el9.4-rhel9"
    ctr = container(ds, "nvidia-driver-ctr")
    assert ctr["image"] == "nvcr.io/nvidia/driver:595.91.07-5.14.0-427.13.1.el9_4.x86_64-rhel9"
    assert "repos" not in mounts(ctr) and "envFrom" not in ctr
    assert not any(name.startswith("subscription-config") for name in volume_paths(ds))
    assert "params" in mounts(ctr)


@pytest.mark.parametrize(("kernel", "sanitized"), [
    ("5.15.0-1074-azure", "5.15.0-1074-azure"),
    ("5.14.0-427.13.1.el9_4.x86_64", "5.14.0-427.13.1.el9.4"),
    ("6.1.0-AARCH64_64K", "6.1.0-aarch64.64k"),
    ("5.14.0-503.el9.aarch64_64k", "5.14.0-503.el9"),
])
def test_kernel_sanitising(kernel: str, sanitized: str) -> None:
    assert sanitized_kernel(kernel) == sanitized


def _config_problems(document: dict) -> list[str]:
    with pytest.raises(ConfigError) as error:
        render_operand(driver.render, document)
    return [p.path for p in error.value.problems]


def test_precompiled_rejects_what_nvidia_rejects_before_rendering() -> None:
    systems = [{"id": "ubuntu", "versionId": "22.04", "kernelVersions": ["5.15.0-1074-azure"]}]
    assert _config_problems(_doc({"usePrecompiled": True}, systems=systems, gds={"enabled": True})) == [
        "operator.gds.enabled"
    ]
    assert _config_problems(_doc({"usePrecompiled": True, "version": DIGEST}, systems=systems)) == [
        "operator.driver.version"
    ]
    twice = [*systems, {"id": "ubuntu", "versionId": "24.04", "kernelVersions": ["5.15.0-1074-azure"]}]
    assert _config_problems(_doc({"usePrecompiled": True}, systems=twice)) == [
        "cluster.operatingSystems[1].kernelVersions"
    ]


def test_digest_versions_get_no_os_suffix() -> None:
    ds = _ds(_doc({"version": DIGEST}, gds={"enabled": True, "version": DIGEST}))
    assert container(ds, "nvidia-driver-ctr")["image"] == f"nvcr.io/nvidia/driver@{DIGEST}"
    assert container(ds, "nvidia-fs-ctr")["image"] == f"nvcr.io/nvidia/cloud-native/nvidia-fs@{DIGEST}"


def test_full_image_reference_gets_the_os_suffix_like_nvidia() -> None:
    ds = _ds(_doc({"repository": "", "image": "registry.example/driver:595.91.07", "version": ""}))
    assert container(ds, "nvidia-driver-ctr")["image"] == "registry.example/driver:595.91.07-ubuntu22.04"


# --- shared transforms and user settings ---------------------------------------------------------------


def test_root_fs_rewrites_host_root_everywhere() -> None:
    default = _ds()
    ds = _ds(_doc(hostPaths={"rootFS": "/host-root"}, gds={"enabled": True}))
    assert volume_paths(ds)["host-root"] == "/host-root"
    for item in [*pod_of(ds)["initContainers"], *pod_of(ds)["containers"]]:
        assert env_of(item)["HOST_ROOT"] == "/host-root"
    assert (env_of(container(ds, "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"]
            != env_of(container(default, "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"])


def test_driver_install_dir_leaves_the_firmware_path_as_nvidia_does() -> None:
    ds = _ds(_doc(hostPaths={"driverInstallDir": "/opt/nvidia/driver"}))
    assert volume_paths(ds)["nv-firmware"] == "/run/nvidia/driver/lib/firmware"
    assert "DRIVER_INSTALL_DIR" not in env_of(container(ds, "nvidia-driver-ctr"))


def test_probe_settings() -> None:
    spec = {"startupProbe": {"initialDelaySeconds": 5, "failureThreshold": 7},
            "livenessProbe": {"periodSeconds": 30}, "readinessProbe": {}}
    ctr = container(_ds(_doc(spec)), "nvidia-driver-ctr")
    assert ctr["startupProbe"]["initialDelaySeconds"] == 5
    assert ctr["startupProbe"]["failureThreshold"] == 7
    assert ctr["startupProbe"]["timeoutSeconds"] == 60
    check = {"command": ["sh", "/usr/local/bin/startup-probe.sh"]}
    assert ctr["livenessProbe"] == {"exec": check, "periodSeconds": 30}
    assert ctr["readinessProbe"] == {"exec": check}


def test_user_settings_reach_the_driver_container() -> None:
    spec = {
        "env": [{"name": "DRIVER_DEBUG", "value": "1"}], "args": ["init", "--debug"], "imagePullPolicy": "Always",
        "resources": {"limits": {"memory": "4Gi"}}, "manager": {"env": [{"name": "ENABLE_AUTO_DRAIN", "value": "true"}]},
    }
    ds = _ds(_doc(spec, daemonsets={"labels": {"team": "gpu"}}))
    ctr = container(ds, "nvidia-driver-ctr")
    assert env_of(ctr)["DRIVER_DEBUG"] == "1"
    assert [e["name"] for e in ctr["env"]][-1] == "DRIVER_CONFIG_DIGEST"
    assert ctr["args"] == ["init", "--debug"]
    assert ctr["imagePullPolicy"] == "Always"
    for item in pod_of(ds)["containers"]:
        assert item["resources"] == {"limits": {"memory": "4Gi"}}
    assert all("resources" not in item for item in pod_of(ds)["initContainers"])
    assert env_of(container(ds, "k8s-driver-manager"))["ENABLE_AUTO_DRAIN"] == "true"
    assert ds["spec"]["template"]["metadata"]["labels"]["team"] == "gpu"


# --- the config digest ---------------------------------------------------------------------------------


def _digest(document: dict | None = None) -> str:
    return env_of(container(_ds(document), "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"]


def test_digest_is_deterministic_and_follows_install_inputs() -> None:
    base = _digest()
    assert base == _digest()
    for changed in (
        _doc({"version": "580.105.08"}),
        _doc({"env": [{"name": "X", "value": "1"}]}),
        _doc({"kernelModuleType": "open"}),
        with_agents(),
        _doc({"rdma": {"enabled": True}}),
        _doc({"secretEnv": "creds"}),
        _doc({"kernelModuleConfig": {"name": "params"}}),
    ):
        assert _digest(changed) != base, changed


def test_digest_ignores_what_does_not_change_the_installation() -> None:
    base = _digest()
    for unchanged in (
        _doc({"resources": {"limits": {"memory": "4Gi"}}, "imagePullPolicy": "Always", "imagePullSecrets": ["s"]}),
        _doc({"startupProbe": {"failureThreshold": 10}, "livenessProbe": {"periodSeconds": 5}}),
        _doc(daemonsets={"labels": {"team": "gpu"}, "priorityClassName": "high",
                         "tolerations": [{"operator": "Exists"}]}),
    ):
        assert _digest(unchanged) == base, unchanged


def test_config_digest_skips_node_facts_and_itself() -> None:
    pod = pod_of(_ds())
    digest = config_digest(pod, "/")
    assert digest == env_of(container(_ds(), "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"]
    main = pod["containers"][0]
    main["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name"
    assert config_digest(pod, "/") == digest
    assert config_digest(pod, "/host") != digest


# --- the startup-probe script --------------------------------------------------------------------------


def _probe_run(tmp_path: Path, *, loaded: bool, daemons: str | None, smi_ok: bool, extra_env: dict | None = None):
    status_dir, module_dir, bin_dir = tmp_path / "validations", tmp_path / "module", tmp_path / "bin"
    module_dir.mkdir()
    bin_dir.mkdir()
    if loaded:
        (module_dir / "refcnt").write_text("3\n")
    if daemons is not None:
        status_dir.mkdir()
        (status_dir / ".driver-daemons-status").write_text(daemons)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho 'GPU 0: H100'\nexit {0 if smi_ok else 9}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    script = (driver.startup_probe_script()
              .replace("/run/nvidia/validations", str(status_dir))
              .replace("/sys/module/nvidia/refcnt", str(module_dir / "refcnt")))
    path = tmp_path / "probe.sh"
    path.write_text(script)
    environment = {"PATH": f"{bin_dir}:{os.environ['PATH']}", **(extra_env or {})}
    result = subprocess.run(["sh", str(path)], env=environment, capture_output=True, text=True, timeout=10)
    return result, status_dir / ".driver-ctr-ready"


def test_probe_script_publishes_ready_file_with_flags(tmp_path: Path) -> None:
    result, ready = _probe_run(tmp_path, loaded=True, daemons="Ready\n", smi_ok=True,
                               extra_env={"GDS_ENABLED": "true", "GPU_DIRECT_RDMA_ENABLED": "true"})
    assert result.returncode == 0, result.stderr
    assert ready.read_text() == "GDRCOPY_ENABLED: false\nGDS_ENABLED: true\nGPU_DIRECT_RDMA_ENABLED: true\n"
    assert [p.name for p in ready.parent.iterdir() if p.name.startswith(".driver-ctr-ready")] == [".driver-ctr-ready"]


def test_probe_script_without_daemons_file(tmp_path: Path) -> None:
    result, ready = _probe_run(tmp_path, loaded=True, daemons=None, smi_ok=True)
    assert result.returncode == 0, result.stderr
    assert ready.exists()


@pytest.mark.parametrize(("loaded", "daemons", "smi_ok", "reason"), [
    (False, None, True, "not loaded"),
    (True, "Installing", True, "'Installing'"),
    (True, "Ready", False, "nvidia-smi failed"),
])
def test_probe_script_fails_until_the_driver_is_usable(
    tmp_path: Path, loaded: bool, daemons: str | None, smi_ok: bool, reason: str
) -> None:
    result, ready = _probe_run(tmp_path, loaded=loaded, daemons=daemons, smi_ok=smi_ok)
    assert result.returncode != 0
    assert reason in result.stderr
    assert not ready.exists()
