"""state-mps-control-daemon against reference/gpu-operator.md §3.5 and upstream TransformMPSControlDaemon."""

from __future__ import annotations

import pytest

from gpu_operator.render.operands import mps_control_daemon
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

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
WITH_CONFIG = {
    "operator": {"devicePlugin": {"config": {"name": "plugin-configs", "default": "mps"}}},
    "configs": {
        "devicePlugin": {"mps": {"sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}}
    },
}


def _ds(document: dict | None = None) -> dict:
    return find(render_operand(mps_control_daemon.render, document), "DaemonSet")


def test_follows_the_device_plugin_switch() -> None:
    assert render_operand(mps_control_daemon.render, {"operator": {"devicePlugin": {"enabled": False}}}) == []


def test_only_the_daemonset_no_unused_account_or_rbac() -> None:
    objects = render_operand(mps_control_daemon.render)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("DaemonSet", "nvidia-device-plugin-mps-control-daemon"),
    ]
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = _ds({"agents": {"implementation": "nvidia"}})
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-device-plugin-mps-control-daemon"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mps.capable": "true"}
    assert pod["serviceAccountName"] == "nvidia-device-plugin"
    assert pod["hostPID"] is True
    assert pod["runtimeClassName"] == "nvidia"
    assert init_names(ds) == ["toolkit-validation", "mps-control-daemon-mounts"]
    assert mounts(container(ds, "toolkit-validation")) == {"run-nvidia": "/run/nvidia"}
    assert container(ds, "toolkit-validation")["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    mounter = container(ds, "mps-control-daemon-mounts")
    assert mounter["image"] == IMAGE
    assert mounter["command"] == ["mps-control-daemon", "mount-shm"]
    assert mounter["securityContext"] == {"privileged": True}
    assert mounter["volumeMounts"] == [{"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}]
    assert [c["name"] for c in pod["containers"]] == ["mps-control-daemon-ctr"]
    main = container(ds, "mps-control-daemon-ctr")
    assert main["image"] == IMAGE
    assert main["command"] == ["mps-control-daemon"]
    assert main["securityContext"] == {"privileged": True}
    assert env_of(main) == {
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "MIG_STRATEGY": "single",
        "NVIDIA_MIG_MONITOR_DEVICES": "all",
    }
    assert mounts(main) == {"mps-shm": "/dev/shm", "mps-root": "/mps"}
    assert volume_paths(ds) == {
        "run-nvidia": "/run/nvidia", "mps-root": "/run/nvidia/mps", "mps-shm": "/run/nvidia/mps/shm"
    }
    types = {v["name"]: v["hostPath"].get("type") for v in pod["volumes"]}
    assert types == {"run-nvidia": "Directory", "mps-root": "DirectoryOrCreate", "mps-shm": None}


def test_plugin_config_adds_config_manager_without_share_process_namespace() -> None:
    ds = _ds(WITH_CONFIG)
    pod = pod_of(ds)
    assert init_names(ds) == ["toolkit-validation", "mps-control-daemon-mounts", "config-manager-init"]
    assert [c["name"] for c in pod["containers"]] == ["mps-control-daemon-ctr", "config-manager"]
    assert "shareProcessNamespace" not in pod
    main = container(ds, "mps-control-daemon-ctr")
    assert env_of(main)["CONFIG_FILE"] == "/config/config.yaml"
    assert mounts(main)["plugin-configs"] == "/available-configs"
    sidecar = container(ds, "config-manager")
    assert env_of(sidecar)["PROCESS_TO_SIGNAL"] == "/usr/bin/mps-control-daemon"
    assert env_of(sidecar)["DEFAULT_CONFIG"] == "mps"
    assert env_of(container(ds, "config-manager-init"))["ONESHOT"] == "true"
    assert pod["volumes"][-2:] == [
        {"name": "plugin-configs", "configMap": {"name": "plugin-configs"}},
        {"name": "config", "emptyDir": {}},
    ]
    assert not [o for o in render_operand(mps_control_daemon.render, WITH_CONFIG) if o["kind"] == "ConfigMap"]


def test_always_nvidia_image_even_when_the_plugin_runs_our_agent() -> None:
    ds = _ds(with_agents(WITH_CONFIG, implementation="agents"))
    for name in ("mps-control-daemon-mounts", "mps-control-daemon-ctr", "config-manager-init", "config-manager"):
        assert container(ds, name)["image"] == IMAGE, name
    assert container(ds, "config-manager")["command"] == ["config-manager"]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("none", {"MIG_STRATEGY": "none"}),
        ("single", {"MIG_STRATEGY": "single", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
        ("mixed", {"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
    ],
)
def test_mig_strategy_env(strategy: str, expected: dict[str, str]) -> None:
    variables = env_of(container(_ds({"operator": {"mig": {"strategy": strategy}}}), "mps-control-daemon-ctr"))
    assert {k: v for k, v in variables.items() if "MIG" in k} == expected


def test_mps_root_moves_volumes() -> None:
    ds = _ds({"operator": {"devicePlugin": {"mps": {"root": "/var/mps"}}}})
    assert volume_paths(ds)["mps-root"] == "/var/mps"
    assert volume_paths(ds)["mps-shm"] == "/var/mps/shm"
    assert mounts(container(ds, "mps-control-daemon-ctr")) == {"mps-shm": "/dev/shm", "mps-root": "/mps"}


def test_nri_plugin_annotates_the_daemon_container_only() -> None:
    document = {**WITH_CONFIG, "operator": {**WITH_CONFIG["operator"], "cdi": {"nriPluginEnabled": True}}}
    ds = _ds(document)
    assert "runtimeClassName" not in pod_of(ds)
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.mps-control-daemon-ctr": "management.nvidia.com/gpu=all"
    }


def test_takes_image_and_resources_but_not_env_args_or_host_network_from_the_plugin() -> None:
    document = {"operator": {"devicePlugin": {
        "repository": "registry.example/nvidia",
        "version": "v0.20.1",
        "imagePullPolicy": "Always",
        "imagePullSecrets": ["ngc"],
        "resources": {"requests": {"cpu": "50m"}},
        "env": [{"name": "LOG_LEVEL", "value": "debug"}],
        "args": ["--verbose"],
        "hostNetwork": True,
    }}}
    ds = _ds(document)
    pod = pod_of(ds)
    main = container(ds, "mps-control-daemon-ctr")
    assert main["image"] == "registry.example/nvidia/k8s-device-plugin:v0.20.1"
    assert main["imagePullPolicy"] == "Always"
    assert container(ds, "mps-control-daemon-mounts")["imagePullPolicy"] == "Always"
    assert main["resources"] == {"requests": {"cpu": "50m"}}
    assert "resources" not in container(ds, "mps-control-daemon-mounts")
    assert "LOG_LEVEL" not in env_of(main)
    assert "args" not in main
    assert "hostNetwork" not in pod
    assert pod["imagePullSecrets"] == [{"name": "ngc"}]
    assert_valid([ds])


@pytest.mark.parametrize(
    "document",
    [
        None,
        WITH_CONFIG,
        {"operator": {"cdi": {"enabled": False}, "mig": {"strategy": "mixed"}}},
        {"operator": {"cdi": {"nriPluginEnabled": True}}, "cluster": {"containerRuntime": "crio"}},
    ],
)
def test_schema_valid(document: dict | None) -> None:
    assert_valid(render_operand(mps_control_daemon.render, document))
