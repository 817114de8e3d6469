"""state-container-toolkit against reference/gpu-operator.md §3.2 and NVIDIA's TransformToolkit/transformForRuntime."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpu_operator.render.operands import container_toolkit
from gpu_operator.render.operands.toolkit_runtime import host_config_sources
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

VALIDATOR_IMAGE = "nvcr.io/nvidia/gpu-operator:v26.7.0"
CTR = "nvidia-container-toolkit-ctr"
K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
K3S_SOCKET = "/run/k3s/containerd/containerd.sock"
RUNTIME_VOLUMES = {
    "containerd-config", "containerd-drop-in-config", "containerd-socket", "crio-config", "crio-drop-in-config",
    "docker-config", "docker-socket", "nri-socket",
}


def toolkit_ds(document: dict | None = None) -> dict:
    return find(render_operand(container_toolkit.render, document), "DaemonSet")


def toolkit_env(document: dict | None = None) -> dict:
    return env_of(container(toolkit_ds(document), CTR))


def runtime_volumes(ds: dict) -> dict[str, str]:
    return {name: path for name, path in volume_paths(ds).items() if name in RUNTIME_VOLUMES}


def runtime(name: str, **operator: object) -> dict:
    return {"cluster": {"containerRuntime": name}, "operator": operator}


def with_toolkit_env(*pairs: tuple[str, str], runtime_name: str = "containerd") -> dict:
    return runtime(runtime_name, toolkit={"env": [{"name": k, "value": v} for k, v in pairs]})


def test_disabled_renders_nothing() -> None:
    assert render_operand(container_toolkit.render, {"operator": {"toolkit": {"enabled": False}}}) == []


def test_objects_in_upstream_file_order() -> None:
    objects = render_operand(container_toolkit.render)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-container-toolkit"),
        ("Role", "nvidia-container-toolkit"),
        ("RoleBinding", "nvidia-container-toolkit"),
        ("ConfigMap", "nvidia-container-toolkit-entrypoint"),
        ("DaemonSet", "nvidia-container-toolkit-daemonset"),
    ]
    assert all(o["metadata"]["namespace"] == "gpu-operator" for o in objects)
    assert_valid(objects)


def test_role_keeps_only_the_daemonset_listing() -> None:
    objects = render_operand(container_toolkit.render)
    assert find(objects, "Role")["rules"] == [{"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list"]}]
    binding = find(objects, "RoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nvidia-container-toolkit",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-container-toolkit", "namespace": "gpu-operator"},
    ]


def test_entrypoint_config_map_holds_our_script() -> None:
    cm = find(render_operand(container_toolkit.render), "ConfigMap")
    assert cm["metadata"]["labels"]["app"] == "nvidia-container-toolkit-daemonset"
    script = cm["data"]["entrypoint.sh"]
    assert list(cm["data"]) == ["entrypoint.sh"]
    assert script.startswith("#!/bin/sh\n")
    assert "/run/nvidia/validations/driver-ready" in script
    assert "set -a" in script
    assert script.rstrip().endswith("exec nvidia-toolkit")


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell to parse the script")
def test_entrypoint_script_is_valid_shell() -> None:
    result = subprocess.run(["sh", "-n"], input=container_toolkit.entrypoint_script(), text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_daemonset_matches_upstream() -> None:
    ds = toolkit_ds()
    pod = pod_of(ds)
    assert ds["metadata"]["labels"]["app"] == "nvidia-container-toolkit-daemonset"
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-container-toolkit-daemonset"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.container-toolkit": "true"}
    assert pod["serviceAccountName"] == "nvidia-container-toolkit"
    assert pod["hostPID"] is True
    assert "runtimeClassName" not in pod
    assert "annotations" not in ds["metadata"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert init_names(ds) == ["driver-validation"]
    ctr = container(ds, CTR)
    assert ctr["image"] == "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    assert ctr["imagePullPolicy"] == "IfNotPresent"
    assert ctr["command"] == ["/bin/sh", "-c"]
    assert ctr["args"] == ["/bin/entrypoint.sh"]
    assert ctr["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}}
    assert volume_paths(ds) == {
        "toolkit-root": "/run/nvidia/toolkit",
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/run/nvidia/driver",
        "host-root": "/",
        "toolkit-install-dir": "/usr/local/nvidia",
        "crio-hooks": "/run/containers/oci/hooks.d",
        "host-dev-char": "/dev/char",
        "cdi-root": "/var/run/cdi",
        "containerd-config": "/etc/containerd",
        "containerd-drop-in-config": "/etc/containerd/conf.d",
        "containerd-socket": "/run/containerd",
    }
    assert mounts(ctr) == {
        "nvidia-container-toolkit-entrypoint": "/bin/entrypoint.sh",
        "toolkit-root": "/run/nvidia/toolkit",
        "run-nvidia-validations": "/run/nvidia/validations",
        "toolkit-install-dir": "/usr/local/nvidia",
        "crio-hooks": "/usr/share/containers/oci/hooks.d",
        "driver-install-dir": "/driver-root",
        "host-root": "/host",
        "cdi-root": "/var/run/cdi",
        "containerd-config": "/runtime/config-dir/",
        "containerd-drop-in-config": "/runtime/config-dir.d/",
        "containerd-socket": "/runtime/sock-dir/",
    }


def test_volume_types_and_entrypoint_mode() -> None:
    volumes = {v["name"]: v for v in pod_of(toolkit_ds())["volumes"]}
    assert volumes["nvidia-container-toolkit-entrypoint"]["configMap"] == {
        "name": "nvidia-container-toolkit-entrypoint", "defaultMode": 0o700,
    }
    directory_or_create = {n for n, v in volumes.items() if v.get("hostPath", {}).get("type") == "DirectoryOrCreate"}
    assert directory_or_create == {
        "toolkit-root", "run-nvidia-validations", "driver-install-dir", "cdi-root", "containerd-config",
        "containerd-drop-in-config",
    }
    ctr_mounts = container(toolkit_ds(), CTR)["volumeMounts"]
    entrypoint_mount = next(m for m in ctr_mounts if m["name"] == "nvidia-container-toolkit-entrypoint")
    assert entrypoint_mount == {
        "name": "nvidia-container-toolkit-entrypoint", "mountPath": "/bin/entrypoint.sh", "readOnly": True,
        "subPath": "entrypoint.sh",
    }


def test_default_env_is_containerd_with_cdi() -> None:
    ctr = container(toolkit_ds(), CTR)
    assert [e["name"] for e in ctr["env"]] == [
        "ROOT", "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND", "NVIDIA_VISIBLE_DEVICES", "TOOLKIT_PID_FILE",
        "NRI_NAMESPACE", "CDI_ENABLED", "NVIDIA_RUNTIME_SET_AS_DEFAULT", "NVIDIA_CONTAINER_RUNTIME_MODE",
        "CRIO_CONFIG_MODE", "RUNTIME", "CONTAINERD_RUNTIME_CLASS", "RUNTIME_CONFIG", "CONTAINERD_CONFIG",
        "RUNTIME_DROP_IN_CONFIG", "RUNTIME_DROP_IN_CONFIG_HOST_PATH", "RUNTIME_SOCKET", "CONTAINERD_SOCKET",
    ]
    assert env_of(ctr) == {
        "ROOT": "/usr/local/nvidia",
        "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND": "management.nvidia.com/gpu",
        "NVIDIA_VISIBLE_DEVICES": "void",
        "TOOLKIT_PID_FILE": "/run/nvidia/toolkit/toolkit.pid",
        "NRI_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "CDI_ENABLED": "true",
        "NVIDIA_RUNTIME_SET_AS_DEFAULT": "false",
        "NVIDIA_CONTAINER_RUNTIME_MODE": "cdi",
        "CRIO_CONFIG_MODE": "config",
        "RUNTIME": "containerd",
        "CONTAINERD_RUNTIME_CLASS": "nvidia",
        "RUNTIME_CONFIG": "/runtime/config-dir/config.toml",
        "CONTAINERD_CONFIG": "/runtime/config-dir/config.toml",
        "RUNTIME_DROP_IN_CONFIG": "/runtime/config-dir.d/99-nvidia.toml",
        "RUNTIME_DROP_IN_CONFIG_HOST_PATH": "/etc/containerd/conf.d/99-nvidia.toml",
        "RUNTIME_SOCKET": "/runtime/sock-dir/containerd.sock",
        "CONTAINERD_SOCKET": "/runtime/sock-dir/containerd.sock",
    }


def test_containerd_runtime_class_follows_operator_runtime_class() -> None:
    variables = toolkit_env({"operator": {"operator": {"runtimeClass": "nvidia-gpu"}}})
    assert variables["CONTAINERD_RUNTIME_CLASS"] == "nvidia-gpu"


def test_cdi_off_on_containerd_leaves_the_cdi_env_out() -> None:
    variables = toolkit_env({"operator": {"cdi": {"enabled": False}}})
    cdi = {"CDI_ENABLED", "NVIDIA_RUNTIME_SET_AS_DEFAULT", "NVIDIA_CONTAINER_RUNTIME_MODE", "CRIO_CONFIG_MODE"}
    assert not cdi & set(variables)
    assert variables["RUNTIME"] == "containerd"


def test_crio_with_cdi() -> None:
    ds = toolkit_ds(runtime("crio"))
    variables = env_of(container(ds, CTR))
    assert variables["RUNTIME"] == "crio"
    assert variables["CRIO_CONFIG_MODE"] == "config"
    assert variables["RUNTIME_CONFIG"] == variables["CRIO_CONFIG"] == "/runtime/config-dir/config.toml"
    assert variables["RUNTIME_DROP_IN_CONFIG"] == "/runtime/config-dir.d/99-nvidia.conf"
    assert variables["RUNTIME_DROP_IN_CONFIG_HOST_PATH"] == "/etc/crio/crio.conf.d/99-nvidia.conf"
    assert not {"CONTAINERD_RUNTIME_CLASS", "RUNTIME_SOCKET", "CONTAINERD_SOCKET"} & set(variables)
    assert runtime_volumes(ds) == {"crio-config": "/etc/crio", "crio-drop-in-config": "/etc/crio/crio.conf.d"}
    assert volume_paths(ds)["crio-hooks"] == "/usr/share/containers/oci/hooks.d"
    assert "runtimeClassName" not in pod_of(ds)


def test_crio_without_cdi_keeps_the_oci_hook() -> None:
    variables = toolkit_env(runtime("crio", cdi={"enabled": False}))
    assert variables["CRIO_CONFIG_MODE"] == "hook"
    assert "CDI_ENABLED" not in variables


def test_docker() -> None:
    ds = toolkit_ds(runtime("docker"))
    variables = env_of(container(ds, CTR))
    assert variables["RUNTIME"] == "docker"
    assert variables["RUNTIME_CONFIG"] == variables["DOCKER_CONFIG"] == "/runtime/config-dir/daemon.json"
    assert variables["RUNTIME_SOCKET"] == variables["DOCKER_SOCKET"] == "/runtime/sock-dir/docker.sock"
    assert not {"RUNTIME_DROP_IN_CONFIG", "CONTAINERD_RUNTIME_CLASS"} & set(variables)
    assert runtime_volumes(ds) == {"docker-config": "/etc/docker", "docker-socket": "/var/run"}
    assert volume_paths(ds)["crio-hooks"] == "/run/containers/oci/hooks.d"


def test_k3s_paths_are_host_paths_rewritten_into_the_container() -> None:
    ds = toolkit_ds(with_toolkit_env(("CONTAINERD_CONFIG", K3S_CONFIG), ("CONTAINERD_SOCKET", K3S_SOCKET)))
    ctr = container(ds, CTR)
    variables = env_of(ctr)
    assert variables["CONTAINERD_CONFIG"] == variables["RUNTIME_CONFIG"] == "/runtime/config-dir/config.toml"
    assert variables["CONTAINERD_SOCKET"] == variables["RUNTIME_SOCKET"] == "/runtime/sock-dir/containerd.sock"
    assert runtime_volumes(ds) == {
        "containerd-config": "/var/lib/rancher/k3s/agent/etc/containerd",
        "containerd-drop-in-config": "/etc/containerd/conf.d",
        "containerd-socket": "/run/k3s/containerd",
    }
    # the user's variables are rewritten in place, not duplicated
    names = [e["name"] for e in ctr["env"]]
    assert names.count("CONTAINERD_CONFIG") == 1 and names.count("CONTAINERD_SOCKET") == 1
    assert names.index("CONTAINERD_CONFIG") < names.index("RUNTIME")


def test_runtime_config_and_drop_in_paths() -> None:
    ds = toolkit_ds(with_toolkit_env(
        ("RUNTIME_CONFIG", "/etc/k0s/containerd.toml"), ("RUNTIME_DROP_IN_CONFIG", "/etc/k0s/containerd.d/nvidia.toml"),
    ))
    variables = env_of(container(ds, CTR))
    assert variables["RUNTIME_CONFIG"] == variables["CONTAINERD_CONFIG"] == "/runtime/config-dir/containerd.toml"
    assert variables["RUNTIME_DROP_IN_CONFIG"] == "/runtime/config-dir.d/nvidia.toml"
    assert variables["RUNTIME_DROP_IN_CONFIG_HOST_PATH"] == "/etc/k0s/containerd.d/nvidia.toml"
    assert runtime_volumes(ds)["containerd-config"] == "/etc/k0s"
    assert runtime_volumes(ds)["containerd-drop-in-config"] == "/etc/k0s/containerd.d"


def test_runtime_specific_config_wins_over_runtime_config() -> None:
    document = with_toolkit_env(("RUNTIME_CONFIG", "/etc/a/one.toml"), ("CONTAINERD_CONFIG", "/etc/b/two.toml"))
    variables = toolkit_env(document)
    assert variables["RUNTIME_CONFIG"] == variables["CONTAINERD_CONFIG"] == "/runtime/config-dir/two.toml"


def test_crio_config_path_from_toolkit_env() -> None:
    ds = toolkit_ds(with_toolkit_env(("CRIO_CONFIG", "/etc/custom/crio.toml"), runtime_name="crio"))
    assert env_of(container(ds, CTR))["CRIO_CONFIG"] == "/runtime/config-dir/crio.toml"
    assert runtime_volumes(ds)["crio-config"] == "/etc/custom"


def test_runtime_config_source_files_move_under_host() -> None:
    variables = toolkit_env(with_toolkit_env(("RUNTIME_CONFIG_SOURCE", "command,file=/etc/containerd/config.toml")))
    assert variables["RUNTIME_CONFIG_SOURCE"] == "command,file=/host/etc/containerd/config.toml"


@pytest.mark.parametrize(("sources", "expected"), [
    ("file=/etc/containerd/config.toml", "file=/host/etc/containerd/config.toml"),
    ("command", "command"),
    ("command,file=/a/b.toml,file=c.toml", "command,file=/host/a/b.toml,file=/host/c.toml"),
    ("file=/etc//x/../config.toml", "file=/host/etc/config.toml"),
    ("other=/etc/x", "other=/etc/x"),
])
def test_host_config_sources(sources: str, expected: str) -> None:
    assert host_config_sources(sources) == expected


def test_nri_plugin_mounts_only_the_nri_socket() -> None:
    ds = toolkit_ds({"operator": {"cdi": {"nriPluginEnabled": True}}})
    ctr = container(ds, CTR)
    variables = env_of(ctr)
    assert variables["ENABLE_NRI_PLUGIN"] == "true"
    assert variables["CDI_ENABLED"] == "true"
    assert variables["RUNTIME"] == "containerd"
    assert variables["NRI_SOCKET"] == "/runtime/nri-sock-dir/nri.sock"
    assert not {"CONTAINERD_RUNTIME_CLASS", "RUNTIME_CONFIG", "CONTAINERD_CONFIG", "RUNTIME_SOCKET"} & set(variables)
    assert runtime_volumes(ds) == {"nri-socket": "/var/run/nri"}
    assert mounts(ctr)["nri-socket"] == "/runtime/nri-sock-dir/"
    nri_volume = next(v for v in pod_of(ds)["volumes"] if v["name"] == "nri-socket")
    assert nri_volume["hostPath"]["type"] == "DirectoryOrCreate"
    assert "runtimeClassName" not in pod_of(ds)
    assert "annotations" not in ds["spec"]["template"]["metadata"]


def test_nri_socket_host_path_from_toolkit_env() -> None:
    document = {"operator": {"cdi": {"nriPluginEnabled": True}, "toolkit": {"env": [
        {"name": "NRI_SOCKET", "value": "/run/k3s/nri/nri.sock"},
    ]}}}
    ds = toolkit_ds(document)
    assert env_of(container(ds, CTR))["NRI_SOCKET"] == "/runtime/nri-sock-dir/nri.sock"
    assert runtime_volumes(ds) == {"nri-socket": "/run/k3s/nri"}


def test_install_dir() -> None:
    ds = toolkit_ds({"operator": {"toolkit": {"installDir": "/opt/nvidia"}}})
    ctr = container(ds, CTR)
    assert env_of(ctr)["ROOT"] == "/opt/nvidia"
    assert [e["name"] for e in ctr["env"]][0] == "ROOT"
    assert volume_paths(ds)["toolkit-install-dir"] == "/opt/nvidia"
    assert mounts(ctr)["toolkit-install-dir"] == "/opt/nvidia"


def test_user_settings_reach_the_toolkit_container_only() -> None:
    document = {"operator": {"toolkit": {
        "env": [{"name": "CONTAINERD_SET_AS_DEFAULT", "value": "false"}, {"name": "RUNTIME", "value": "docker"}],
        "resources": {"limits": {"memory": "512Mi"}}, "imagePullSecrets": ["ngc"], "imagePullPolicy": "Always",
        "args": ["--ignored"], "hostNetwork": True, "repository": "registry.example/nvidia", "version": "v1.20.1",
    }}}
    ds = toolkit_ds(document)
    pod = pod_of(ds)
    ctr = container(ds, CTR)
    variables = env_of(ctr)
    assert variables["CONTAINERD_SET_AS_DEFAULT"] == "false"
    # RUNTIME is the cluster's runtime, set after the user's env as NVIDIA does
    assert variables["RUNTIME"] == "containerd"
    assert ctr["image"] == "registry.example/nvidia/container-toolkit:v1.20.1"
    assert ctr["imagePullPolicy"] == "Always"
    assert ctr["resources"] == {"limits": {"memory": "512Mi"}}
    assert ctr["args"] == ["/bin/entrypoint.sh"]
    assert "hostNetwork" not in pod
    assert "resources" not in container(ds, "driver-validation")
    assert pod["imagePullSecrets"] == [{"name": "ngc"}]


def test_driver_validation_with_our_agent() -> None:
    ds = toolkit_ds(with_agents())
    init = container(ds, "driver-validation")
    assert init["image"] == AGENTS_IMAGE
    assert init["command"] == ["gpu-operator-agent", "validator"]
    assert "args" not in init
    assert env_of(init) == {
        "WITH_WAIT": "true",
        "COMPONENT": "driver",
        "OPERATOR_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
    }
    assert init["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}, "runAsUser": 0}
    assert mounts(init) == {
        "host-root": "/host",
        "driver-install-dir": "/run/nvidia/driver",
        "run-nvidia-validations": "/run/nvidia/validations",
        "host-dev-char": "/host-dev-char",
    }
    propagation = {m["name"]: m.get("mountPropagation") for m in init["volumeMounts"]}
    assert propagation == {
        "host-root": "HostToContainer", "driver-install-dir": "HostToContainer",
        "run-nvidia-validations": "Bidirectional", "host-dev-char": None,
    }


def test_driver_validation_with_nvidia_validator() -> None:
    document = {
        "agents": {"implementation": "nvidia"},
        "operator": {"validator": {"imagePullSecrets": ["ngc-validator"]}},
    }
    ds = toolkit_ds(document)
    init = container(ds, "driver-validation")
    assert init["image"] == VALIDATOR_IMAGE
    assert init["command"] == ["sh", "-c"]
    assert init["args"] == ["nvidia-validator"]
    assert {"name": "ngc-validator"} in pod_of(ds)["imagePullSecrets"]
    # the toolkit itself is NVIDIA's in both implementations
    assert container(ds, CTR)["image"] == "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    assert find(render_operand(container_toolkit.render, document), "ConfigMap")["data"]["entrypoint.sh"]


def test_driver_validation_env_and_driver_install_dir() -> None:
    document = {"operator": {
        "validator": {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]}},
        "hostPaths": {"driverInstallDir": "/opt/nvidia/driver"},
    }}
    ds = toolkit_ds(document)
    init = container(ds, "driver-validation")
    variables = env_of(init)
    assert variables["DISABLE_DEV_CHAR_SYMLINK_CREATION"] == "true"
    assert variables["DRIVER_INSTALL_DIR"] == variables["DRIVER_INSTALL_DIR_CTR_PATH"] == "/opt/nvidia/driver"
    assert mounts(init)["driver-install-dir"] == "/opt/nvidia/driver"
    assert volume_paths(ds)["driver-install-dir"] == "/opt/nvidia/driver"
    assert mounts(container(ds, CTR))["driver-install-dir"] == "/driver-root"


def test_root_fs() -> None:
    ds = toolkit_ds({"operator": {"hostPaths": {"rootFS": "/host-root"}}})
    assert volume_paths(ds)["host-root"] == "/host-root"
    assert volume_paths(ds)["host-dev-char"] == "/host-root/dev/char"
    assert env_of(container(ds, CTR))["HOST_ROOT"] == "/host-root"


@pytest.mark.parametrize("document", [
    {},
    runtime("crio"),
    runtime("crio", cdi={"enabled": False}),
    runtime("docker"),
    runtime("docker", cdi={"enabled": False}),
    {"operator": {"cdi": {"nriPluginEnabled": True}}},
    with_toolkit_env(("CONTAINERD_CONFIG", K3S_CONFIG), ("CONTAINERD_SOCKET", K3S_SOCKET)),
    {"agents": {"implementation": "nvidia"}, "operator": {"toolkit": {"installDir": "/opt/nvidia"}}},
])
def test_every_variant_is_schema_valid(document: dict) -> None:
    assert_valid(render_operand(container_toolkit.render, document))
