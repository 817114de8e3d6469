"""state-mig-manager against reference/gpu-operator.md §3.9 and agents.md §4."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_operator.config.mig_parted import MigPartedConfig
from gpu_operator.mig.default_config import default_config
from gpu_operator.render.operands import mig_manager
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

NVIDIA: dict[str, Any] = {"agents": {"implementation": "nvidia"}}
CUSTOM = {
    "version": "v1",
    "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "two-halves": [{"devices": [0, 1], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}],
    },
}


def _render(operator: dict[str, Any] | None = None, **document: Any) -> list[dict[str, Any]]:
    return render_operand(mig_manager.render, {**NVIDIA, "operator": operator or {}, **document})


def _manager(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return container(find(objects, "DaemonSet"), "nvidia-mig-manager")


def _volume(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(v for v in pod_of(find(objects, "DaemonSet"))["volumes"] if v["name"] == name)


def test_disabled_renders_nothing() -> None:
    assert _render({"migManager": {"enabled": False}}) == []


def test_objects_in_upstream_order() -> None:
    objects = _render()
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-mig-manager"),
        ("Role", "nvidia-mig-manager"),
        ("ClusterRole", "nvidia-mig-manager"),
        ("RoleBinding", "nvidia-mig-manager"),
        ("ClusterRoleBinding", "nvidia-mig-manager"),
        ("ConfigMap", "default-mig-parted-config"),
        ("ConfigMap", "default-gpu-clients"),
        ("ConfigMap", "nvidia-mig-manager-entrypoint"),
        ("DaemonSet", "nvidia-mig-manager"),
    ]
    assert_valid(objects)


def test_rbac_rules() -> None:
    objects = _render()
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "update", "patch"]},
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    assert find(objects, "ClusterRoleBinding")["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-mig-manager", "namespace": "gpu-operator"}
    ]


def test_default_config_map_holds_the_generated_config() -> None:
    data = find(_render(), "ConfigMap", "default-mig-parted-config")["data"]
    assert list(data) == ["config.yaml"]
    parsed = yaml.safe_load(data["config.yaml"])
    assert parsed == default_config()
    assert MigPartedConfig.model_validate(parsed).mig_configs["all-1g.10gb"][1].mig_devices == {"1g.10gb": 7}


def test_default_gpu_clients() -> None:
    data = find(_render(), "ConfigMap", "default-gpu-clients")["data"]
    assert yaml.safe_load(data["clients.yaml"]) == {
        "version": "v1",
        "systemd-services": [
            "nvsm.service", "nvsm-mqtt.service", "nvsm-core.service", "nvsm-api-gateway.service",
            "nvsm-notifier.service", "nv_peer_mem.service", "nvidia-dcgm.service", "dcgm.service",
            "dcgm-exporter.service",
        ],
    }


def test_entrypoint_waits_for_the_driver_and_starts_the_manager() -> None:
    objects = _render()
    script = find(objects, "ConfigMap", "nvidia-mig-manager-entrypoint")["data"]["entrypoint.sh"]
    assert script.startswith("#!/bin/sh\n")
    assert "/run/nvidia/validations/driver-ready" in script
    assert "WITH_SHUTDOWN_HOST_GPU_CLIENTS=\"${IS_HOST_DRIVER:-false}\"" in script
    assert script.rstrip().endswith("exec nvidia-mig-manager")
    assert _volume(objects, "nvidia-mig-manager-entrypoint") == {
        "name": "nvidia-mig-manager-entrypoint",
        "configMap": {"name": "nvidia-mig-manager-entrypoint", "defaultMode": 0o700},
    }
    assert {"name": "nvidia-mig-manager-entrypoint", "mountPath": "/bin/entrypoint.sh", "readOnly": True,
            "subPath": "entrypoint.sh"} in _manager(objects)["volumeMounts"]
    assert _manager(objects)["command"] == ["/bin/entrypoint.sh"]


def test_daemonset_matches_upstream() -> None:
    objects = _render()
    ds = find(objects, "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-mig-manager"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.mig-manager": "true"}
    assert pod["serviceAccountName"] == "nvidia-mig-manager"
    assert pod["hostPID"] is True and pod["hostIPC"] is True
    assert pod["runtimeClassName"] == "nvidia"
    assert init_names(ds) == ["toolkit-validation"]
    manager = _manager(objects)
    assert manager["image"] == "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"
    assert manager["securityContext"] == {"privileged": True}
    assert env_of(manager) == {
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "POD_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        "POD_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "GPU_CLIENTS_FILE": "/gpu-clients/clients.yaml",
        "DEFAULT_GPU_CLIENTS_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "DEFAULT_CONFIG_FILE": "/mig-parted-config/config-default.yaml",
        "CDI_ENABLED": "true",
        "NVIDIA_CDI_HOOK_PATH": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
    }
    assert volume_paths(ds) == {
        "host-sys": "/sys",
        "host-root": "/",
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/run/nvidia/driver",
        "cdi-root": "/var/run/cdi",
    }
    assert mounts(manager) == {
        "nvidia-mig-manager-entrypoint": "/bin/entrypoint.sh",
        "host-sys": "/sys",
        "mig-parted-config": "/mig-parted-config",
        "host-root": "/host",
        "gpu-clients": "/gpu-clients",
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/driver-root",
        "cdi-root": "/var/run/cdi",
    }
    assert _volume(objects, "mig-parted-config") == {
        "name": "mig-parted-config",
        "configMap": {
            "name": "default-mig-parted-config",
            "items": [{"key": "config.yaml", "path": "config-default.yaml"}],
        },
    }
    assert _volume(objects, "gpu-clients") == {"name": "gpu-clients", "configMap": {"name": "default-gpu-clients"}}


def test_agent_runs_the_mig_manager_without_entrypoint() -> None:
    objects = render_operand(mig_manager.render, with_agents())
    assert "nvidia-mig-manager-entrypoint" not in [o["metadata"]["name"] for o in objects]
    agent, nvidia = _manager(objects), _manager(_render())
    assert agent["command"] == ["gpu-operator-agent", "mig-manager"]
    assert agent["image"] == AGENTS_IMAGE
    # what NVIDIA's mig-manager image asks the runtime for in its ENV; the agents image asks for no GPU
    assert env_of(agent) == {**env_of(nvidia), "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_MIG_CONFIG_DEVICES": "all"}
    # still privileged (MIG reconfiguration, GPU resets, host services), as root: the agents image's user is not
    assert nvidia["securityContext"] == {"privileged": True}
    assert agent["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert "nvidia-mig-manager-entrypoint" not in mounts(agent)
    assert mounts(agent) == {k: v for k, v in mounts(nvidia).items() if k != "nvidia-mig-manager-entrypoint"}
    assert "nvidia-mig-manager-entrypoint" not in [v["name"] for v in pod_of(find(objects, "DaemonSet"))["volumes"]]
    assert_valid(objects)


def test_existing_custom_config_replaces_the_default() -> None:
    objects = _render({"migManager": {"config": {"name": "my-mig-layouts"}}})
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"]
    assert names == ["default-gpu-clients", "nvidia-mig-manager-entrypoint"]
    manager = _manager(objects)
    assert env_of(manager)["CONFIG_FILE"] == "/mig-parted-config/config.yaml"
    assert "DEFAULT_CONFIG_FILE" not in env_of(manager)
    assert _volume(objects, "mig-parted-config") == {
        "name": "mig-parted-config", "configMap": {"name": "my-mig-layouts"}
    }


def test_custom_config_contents_are_created() -> None:
    objects = _render({"migManager": {"config": {"name": "my-mig-layouts"}}}, configs={"migManager": CUSTOM})
    custom = find(objects, "ConfigMap", "my-mig-layouts")
    assert list(custom["data"]) == ["config.yaml"]
    parsed = MigPartedConfig.model_validate(yaml.safe_load(custom["data"]["config.yaml"]))
    assert parsed.mig_configs["two-halves"][0].devices == (0, 1)
    assert parsed.mig_configs["two-halves"][0].mig_devices == {"3g.40gb": 2}
    assert "default-mig-parted-config" not in [o["metadata"]["name"] for o in objects]
    assert [o["kind"] for o in objects].index("ConfigMap") < [o["kind"] for o in objects].index("DaemonSet")
    assert_valid(objects)


def test_custom_gpu_clients_config() -> None:
    objects = _render({"migManager": {"gpuClientsConfig": {"name": "dgx-clients"}}})
    assert "default-gpu-clients" not in [o["metadata"]["name"] for o in objects]
    assert _volume(objects, "gpu-clients") == {"name": "gpu-clients", "configMap": {"name": "dgx-clients"}}


@pytest.mark.parametrize("operator,expected", [
    ({"cdi": {"enabled": False}}, {}),
    ({"toolkit": {"enabled": False}}, {"CDI_ENABLED": "true"}),
    ({"toolkit": {"installDir": "/opt/nvidia"}},
     {"CDI_ENABLED": "true", "NVIDIA_CDI_HOOK_PATH": "/opt/nvidia/toolkit/nvidia-cdi-hook"}),
])
def test_cdi_env(operator: dict[str, Any], expected: dict[str, str]) -> None:
    variables = env_of(_manager(_render(operator)))
    assert {k: v for k, v in variables.items() if k in ("CDI_ENABLED", "NVIDIA_CDI_HOOK_PATH")} == expected


def test_host_path_rewrites_and_user_settings() -> None:
    objects = _render({
        "hostPaths": {"rootFS": "/host-fs", "driverInstallDir": "/opt/nvidia/driver"},
        "migManager": {"env": [{"name": "WITH_REBOOT", "value": "true"}], "resources": {"limits": {"memory": "300Mi"}}},
    })
    ds = find(objects, "DaemonSet")
    manager = _manager(objects)
    assert volume_paths(ds)["host-root"] == "/host-fs"
    assert volume_paths(ds)["driver-install-dir"] == "/opt/nvidia/driver"
    assert env_of(manager)["HOST_ROOT"] == "/host-fs"
    assert env_of(manager)["WITH_REBOOT"] == "true"
    assert manager["resources"] == {"limits": {"memory": "300Mi"}}
    assert_valid(objects)


def test_nri_plugin_annotates_instead_of_runtime_class() -> None:
    ds = find(_render({"cdi": {"nriPluginEnabled": True}}), "DaemonSet")
    assert "runtimeClassName" not in pod_of(ds)
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.nvidia-mig-manager": "management.nvidia.com/gpu=all"
    }
