"""state-device-plugin against reference/gpu-operator.md §3.4, §4 and upstream TransformDevicePlugin."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from gpu_operator.config.device_plugin import DevicePluginConfig
from gpu_operator.render.operands import device_plugin
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

NVIDIA = {"agents": {"implementation": "nvidia"}}
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
AGENTS_IMAGE_REF = "ghcr.io/example/agents:1.2.3"
TIME_SLICING = {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
MPS = {
    "version": "v1",
    "flags": {"migStrategy": "none"},
    "sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}},
}


def _doc(operator: dict | None = None, **top: object) -> dict:
    return {**NVIDIA, **top, "operator": operator or {}}


def _with_config(**top: object) -> dict:
    operator = {"devicePlugin": {"config": {"name": "plugin-configs", "default": "ts"}}}
    return {**NVIDIA, "operator": operator, "configs": {"devicePlugin": {"ts": TIME_SLICING, "mps": MPS}}, **top}


def _ds(document: dict) -> dict:
    return find(render_operand(device_plugin.render, document), "DaemonSet")


def _main(document: dict) -> dict:
    return container(_ds(document), "nvidia-device-plugin")


def test_disabled_renders_nothing() -> None:
    assert render_operand(device_plugin.render, _doc({"devicePlugin": {"enabled": False}})) == []


def test_objects_in_upstream_order_with_nvidia_implementation() -> None:
    objects = render_operand(device_plugin.render, NVIDIA)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-device-plugin"),
        ("ClusterRole", "nvidia-device-plugin"),
        ("ClusterRoleBinding", "nvidia-device-plugin"),
        ("ConfigMap", "nvidia-device-plugin-entrypoint"),
        ("DaemonSet", "nvidia-device-plugin-daemonset"),
    ]
    assert_valid(objects)


def test_rbac_reads_nodes_only_and_has_no_scc_role() -> None:
    objects = render_operand(device_plugin.render, NVIDIA)
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    ]
    binding = find(objects, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "nvidia-device-plugin"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "nvidia-device-plugin", "namespace": "gpu-operator"}
    ]
    assert not [o for o in objects if o["kind"] in ("Role", "RoleBinding")]


def test_daemonset_matches_upstream() -> None:
    ds = _ds(NVIDIA)
    pod = pod_of(ds)
    assert ds["metadata"]["labels"]["app"] == "nvidia-device-plugin-daemonset"
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-device-plugin-daemonset"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true"}
    assert pod["serviceAccountName"] == "nvidia-device-plugin"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["priorityClassName"] == "system-node-critical"
    assert "shareProcessNamespace" not in pod and "hostPID" not in pod
    assert init_names(ds) == ["toolkit-validation"]
    validation = container(ds, "toolkit-validation")
    assert validation["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert "/run/nvidia/validations/toolkit-ready" in validation["args"][0]
    assert [c["name"] for c in pod["containers"]] == ["nvidia-device-plugin"]
    main = container(ds, "nvidia-device-plugin")
    assert main["image"] == IMAGE
    assert main["imagePullPolicy"] == "IfNotPresent"
    assert main["command"] == ["/bin/sh", "-c"]
    assert main["args"] == ["/bin/entrypoint.sh"]
    assert main["securityContext"] == {"privileged": True}


def test_main_container_env_with_cdi_and_single_mig() -> None:
    assert env_of(_main(NVIDIA)) == {
        "PASS_DEVICE_SPECS": "true",
        "FAIL_ON_INIT_ERROR": "true",
        "DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri",
        "DEVICE_ID_STRATEGY": "uuid",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "all",
        "MPS_ROOT": "/run/nvidia/mps",
        "MIG_STRATEGY": "single",
        "NVIDIA_MIG_MONITOR_DEVICES": "all",
        "CDI_ENABLED": "true",
        "CDI_ANNOTATION_PREFIX": "cdi.k8s.io/",
        "NVIDIA_CDI_HOOK_PATH": "/usr/local/nvidia/toolkit/nvidia-cdi-hook",
    }


def test_host_paths_and_mounts() -> None:
    ds = _ds(NVIDIA)
    assert volume_paths(ds) == {
        "device-plugin": "/var/lib/kubelet/device-plugins",
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/run/nvidia/driver",
        "host-root": "/",
        "cdi-root": "/var/run/cdi",
        "mps-root": "/run/nvidia/mps",
        "mps-shm": "/run/nvidia/mps/shm",
    }
    main = container(ds, "nvidia-device-plugin")
    assert mounts(main) == {
        "nvidia-device-plugin-entrypoint": "/bin/entrypoint.sh",
        "device-plugin": "/var/lib/kubelet/device-plugins",
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/driver-root",
        "host-root": "/host",
        "cdi-root": "/var/run/cdi",
        "mps-shm": "/dev/shm",
        "mps-root": "/mps",
    }
    by_name = {m["name"]: m for m in main["volumeMounts"]}
    assert by_name["host-root"] == {
        "name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"
    }
    assert by_name["driver-install-dir"]["mountPropagation"] == "HostToContainer"
    assert by_name["nvidia-device-plugin-entrypoint"]["subPath"] == "entrypoint.sh"
    entrypoint = next(v for v in pod_of(ds)["volumes"] if v["name"] == "nvidia-device-plugin-entrypoint")
    assert entrypoint["configMap"] == {"name": "nvidia-device-plugin-entrypoint", "defaultMode": 0o700}


def test_entrypoint_waits_for_driver_ready_and_starts_the_plugin() -> None:
    objects = render_operand(device_plugin.render, NVIDIA)
    configmap = find(objects, "ConfigMap", "nvidia-device-plugin-entrypoint")
    assert configmap["metadata"]["labels"]["app"] == "nvidia-device-plugin-daemonset"
    script = configmap["data"]["entrypoint.sh"]
    assert script == device_plugin.entrypoint_script()
    assert script.startswith("#!/bin/sh\n")
    assert "/run/nvidia/validations/driver-ready" in script
    assert "set -a" in script
    assert script.rstrip().endswith("exec nvidia-device-plugin")
    syntax = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert syntax.returncode == 0, syntax.stderr


def test_entrypoint_exports_driver_ready_and_detects_modules(tmp_path) -> None:
    """Run the script with the validations dir, /proc/modules and the plugin replaced by test doubles."""
    ready = tmp_path / "driver-ready"
    ready.write_text("IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\n")
    modules = tmp_path / "modules"
    modules.write_text("gdrdrv 20480 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n")
    plugin = tmp_path / "nvidia-device-plugin"
    plugin.write_text("#!/bin/sh\necho ROOT=$NVIDIA_DRIVER_ROOT GDRCOPY=$GDRCOPY_ENABLED GDS=${GDS_ENABLED:-unset}\n")
    plugin.chmod(0o755)
    script = (
        device_plugin.entrypoint_script()
        .replace("/run/nvidia/validations/driver-ready", str(ready))
        .replace("/proc/modules", str(modules))
    )
    result = subprocess.run(
        ["sh", "-c", script], text=True, capture_output=True, timeout=10, env={"PATH": f"{tmp_path}:/usr/bin:/bin"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ROOT=/run/nvidia/driver GDRCOPY=true GDS=unset")


def test_config_name_unset_has_no_config_manager() -> None:
    ds = _ds(NVIDIA)
    pod = pod_of(ds)
    assert "config-manager-init" not in init_names(ds)
    assert [c["name"] for c in pod["containers"]] == ["nvidia-device-plugin"]
    assert "CONFIG_FILE" not in env_of(container(ds, "nvidia-device-plugin"))
    assert "config" not in {v["name"] for v in pod["volumes"]}
    assert "shareProcessNamespace" not in pod


def test_config_name_set_adds_config_manager_and_shared_config() -> None:
    ds = _ds(_with_config())
    pod = pod_of(ds)
    assert init_names(ds) == ["toolkit-validation", "config-manager-init"]
    assert [c["name"] for c in pod["containers"]] == ["nvidia-device-plugin", "config-manager"]
    assert pod["shareProcessNamespace"] is True
    assert pod["volumes"][-2:] == [
        {"name": "plugin-configs", "configMap": {"name": "plugin-configs"}},
        {"name": "config", "emptyDir": {}},
    ]
    main = container(ds, "nvidia-device-plugin")
    assert env_of(main)["CONFIG_FILE"] == "/config/config.yaml"
    assert mounts(main)["config"] == "/config"
    assert mounts(main)["plugin-configs"] == "/available-configs"
    expected = {
        "ONESHOT": "true",
        "KUBECONFIG": "",
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "NODE_LABEL": "nvidia.com/device-plugin.config",
        "CONFIG_FILE_SRCDIR": "/available-configs",
        "CONFIG_FILE_DST": "/config/config.yaml",
        "DEFAULT_CONFIG": "ts",
        "SEND_SIGNAL": "false",
        "SIGNAL": "",
        "PROCESS_TO_SIGNAL": "",
        "FALLBACK_STRATEGIES": "empty",
    }
    init = container(ds, "config-manager-init")
    assert env_of(init) == expected
    assert init["command"] == ["config-manager"]
    assert init["image"] == IMAGE
    assert "securityContext" not in init
    assert mounts(init) == {"config": "/config", "plugin-configs": "/available-configs"}
    sidecar = container(ds, "config-manager")
    signalling = {"ONESHOT": "false", "SEND_SIGNAL": "true", "SIGNAL": "1", "PROCESS_TO_SIGNAL": "nvidia-device-plugin"}
    assert env_of(sidecar) == {**expected, **signalling}
    assert sidecar["securityContext"] == {"privileged": True}
    assert sidecar["image"] == IMAGE
    assert mounts(sidecar) == {"config": "/config", "plugin-configs": "/available-configs"}


def test_config_name_without_contents_refers_to_an_existing_configmap() -> None:
    document = _doc({"devicePlugin": {"config": {"name": "existing"}}})
    objects = render_operand(device_plugin.render, document)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"] == ["nvidia-device-plugin-entrypoint"]
    assert env_of(container(find(objects, "DaemonSet"), "config-manager"))["DEFAULT_CONFIG"] == ""


def test_plugin_configmap_round_trips() -> None:
    objects = render_operand(device_plugin.render, _with_config())
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"] == [
        "plugin-configs", "nvidia-device-plugin-entrypoint"
    ]
    configmap = find(objects, "ConfigMap", "plugin-configs")
    assert configmap["metadata"]["namespace"] == "gpu-operator"
    assert sorted(configmap["data"]) == ["mps", "ts"]
    time_slicing = yaml.safe_load(configmap["data"]["ts"])
    assert time_slicing == {
        "version": "v1",
        "flags": {},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "resources": [{"name": "nvidia.com/gpu", "devices": "all", "replicas": 4}],
            }
        },
    }
    mps = yaml.safe_load(configmap["data"]["mps"])
    assert mps["flags"] == {"migStrategy": "none"}
    assert mps["sharing"]["mps"]["resources"] == [{"name": "nvidia.com/gpu", "devices": "all", "replicas": 2}]
    for name, source in (("ts", TIME_SLICING), ("mps", MPS)):
        assert DevicePluginConfig.model_validate(yaml.safe_load(configmap["data"][name])) == (
            DevicePluginConfig.model_validate(source)
        )
        assert "null" not in configmap["data"][name]
    assert_valid(objects)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("none", {"MIG_STRATEGY": "none"}),
        ("single", {"MIG_STRATEGY": "single", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
        ("mixed", {"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
    ],
)
def test_mig_strategy_env(strategy: str, expected: dict[str, str]) -> None:
    variables = env_of(_main(_doc({"mig": {"strategy": strategy}})))
    assert {k: v for k, v in variables.items() if k.startswith(("MIG_", "NVIDIA_MIG"))} == expected


def test_cdi_off_keeps_envvar_strategy() -> None:
    variables = env_of(_main(_doc({"cdi": {"enabled": False}})))
    assert variables["DEVICE_LIST_STRATEGY"] == "envvar"
    assert not {"CDI_ENABLED", "CDI_ANNOTATION_PREFIX", "NVIDIA_CDI_HOOK_PATH"} & variables.keys()


def test_cdi_hook_follows_toolkit_install_dir_and_needs_the_toolkit() -> None:
    custom = env_of(_main(_doc({"toolkit": {"installDir": "/opt/nvidia"}})))
    assert custom["NVIDIA_CDI_HOOK_PATH"] == "/opt/nvidia/toolkit/nvidia-cdi-hook"
    without_toolkit = env_of(_main(_doc({"toolkit": {"enabled": False}})))
    assert without_toolkit["CDI_ENABLED"] == "true"
    assert "NVIDIA_CDI_HOOK_PATH" not in without_toolkit


def test_nri_plugin_annotates_the_plugin_container_only() -> None:
    document = _with_config(operator={
        "devicePlugin": {"config": {"name": "plugin-configs", "default": "ts"}},
        "cdi": {"nriPluginEnabled": True},
    })
    ds = _ds(document)
    assert "runtimeClassName" not in pod_of(ds)
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.nvidia-device-plugin": "management.nvidia.com/gpu=all"
    }
    assert_valid([ds])


def test_crio_without_cdi_gets_no_runtime_class() -> None:
    ds = _ds(_doc({"cdi": {"enabled": False}}, cluster={"containerRuntime": "crio"}))
    assert "runtimeClassName" not in pod_of(ds)
    assert "annotations" not in ds["spec"]["template"]["metadata"]


def test_custom_runtime_class() -> None:
    assert pod_of(_ds(_doc({"operator": {"runtimeClass": "nvidia-cdi"}})))["runtimeClassName"] == "nvidia-cdi"


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ({}, {}),
        ({"gds": {"enabled": True}}, {"GDS_ENABLED": "true", "MOFED_ENABLED": "true"}),
        ({"gdrcopy": {"enabled": True}}, {"GDRCOPY_ENABLED": "true"}),
        (
            {"gds": {"enabled": True}, "gdrcopy": {"enabled": True}},
            {"GDS_ENABLED": "true", "MOFED_ENABLED": "true", "GDRCOPY_ENABLED": "true"},
        ),
    ],
)
def test_gds_and_gdrcopy_flags(operator: dict, expected: dict[str, str]) -> None:
    variables = env_of(_main(_doc(operator)))
    assert {k: v for k, v in variables.items() if k in ("GDS_ENABLED", "MOFED_ENABLED", "GDRCOPY_ENABLED")} == expected


def test_kubelet_root_dir_moves_the_device_plugins_dir() -> None:
    ds = _ds(_doc({"hostPaths": {"kubeletRootDir": "/var/lib/k0s/kubelet"}}))
    assert volume_paths(ds)["device-plugin"] == "/var/lib/k0s/kubelet/device-plugins"
    assert mounts(container(ds, "nvidia-device-plugin"))["device-plugin"] == "/var/lib/kubelet/device-plugins"


def test_mps_root_moves_volumes_and_env() -> None:
    ds = _ds(_doc({"devicePlugin": {"mps": {"root": "/var/mps"}}}))
    assert volume_paths(ds)["mps-root"] == "/var/mps"
    assert volume_paths(ds)["mps-shm"] == "/var/mps/shm"
    assert env_of(container(ds, "nvidia-device-plugin"))["MPS_ROOT"] == "/var/mps"


def test_root_fs_and_driver_install_dir_rewrites() -> None:
    ds = _ds(_doc({"hostPaths": {"rootFS": "/host-fs", "driverInstallDir": "/opt/driver"}}))
    assert volume_paths(ds)["host-root"] == "/host-fs"
    assert volume_paths(ds)["driver-install-dir"] == "/opt/driver"
    assert env_of(container(ds, "nvidia-device-plugin"))["HOST_ROOT"] == "/host-fs"


def test_user_settings_reach_the_plugin_container_last() -> None:
    document = _doc({"devicePlugin": {
        "env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}, {"name": "LOG_LEVEL", "value": "debug"}],
        "args": ["--fail-on-init-error=false"],
        "resources": {"limits": {"memory": "256Mi"}},
        "imagePullPolicy": "Always",
        "imagePullSecrets": ["ngc"],
        "repository": "registry.example/nvidia",
        "version": "v0.20.1",
    }})
    ds = _ds(document)
    main = container(ds, "nvidia-device-plugin")
    assert main["image"] == "registry.example/nvidia/k8s-device-plugin:v0.20.1"
    assert main["imagePullPolicy"] == "Always"
    assert main["args"] == ["--fail-on-init-error=false"]
    assert main["resources"] == {"limits": {"memory": "256Mi"}}
    assert env_of(main)["DEVICE_LIST_STRATEGY"] == "volume-mounts"
    assert main["env"][-1] == {"name": "LOG_LEVEL", "value": "debug"}
    assert {"name": "ngc"} in pod_of(ds)["imagePullSecrets"]
    assert_valid([ds])


def test_agent_runs_our_plugin_without_entrypoint() -> None:
    document = {
        "agents": {"image": {"repository": "ghcr.io/example/agents", "tag": "1.2.3"}},
        "operator": {"devicePlugin": {"config": {"name": "plugin-configs", "default": "ts"}}},
        "configs": {"devicePlugin": {"ts": TIME_SLICING}},
    }
    objects = render_operand(device_plugin.render, document)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-device-plugin"),
        ("ClusterRole", "nvidia-device-plugin"),
        ("ClusterRoleBinding", "nvidia-device-plugin"),
        ("ConfigMap", "plugin-configs"),
        ("DaemonSet", "nvidia-device-plugin-daemonset"),
    ]
    ds = find(objects, "DaemonSet")
    main = container(ds, "nvidia-device-plugin")
    assert main["image"] == AGENTS_IMAGE_REF
    assert main["command"] == ["gpu-operator-agent", "device-plugin"]
    assert "args" not in main
    assert "nvidia-device-plugin-entrypoint" not in mounts(main)
    assert "nvidia-device-plugin-entrypoint" not in {v["name"] for v in pod_of(ds)["volumes"]}
    assert env_of(main)["PASS_DEVICE_SPECS"] == "true"
    assert mounts(main)["device-plugin"] == "/var/lib/kubelet/device-plugins"
    for name in ("config-manager-init", "config-manager"):
        manager = container(ds, name)
        assert manager["image"] == AGENTS_IMAGE_REF
        assert manager["command"] == ["gpu-operator-agent", "config-manager"]
    assert env_of(container(ds, "config-manager"))["PROCESS_TO_SIGNAL"] == "gpu-operator-agent device-plugin"
    assert init_names(ds) == ["toolkit-validation", "config-manager-init"]
    assert_valid(objects)


def _agent_security(operator: dict, **top: object) -> dict:
    return _main(with_agents({"operator": operator, **top}))["securityContext"]


def _unprivileged_root(*added: str) -> dict:
    capabilities: dict = {"drop": ["ALL"], **({"add": list(added)} if added else {})}
    return {
        "runAsUser": 0,
        "runAsGroup": 0,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": capabilities,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_agent_without_mig_devices_runs_as_unprivileged_root() -> None:
    assert _agent_security({"mig": {"strategy": "none"}}) == _unprivileged_root()


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_agent_watching_mig_devices_gets_sys_admin_not_privileged(strategy: str) -> None:
    # the NVIDIA runtime honours NVIDIA_MIG_MONITOR_DEVICES only in containers holding CAP_SYS_ADMIN
    main = _main(with_agents({"operator": {"mig": {"strategy": strategy}}}))
    assert env_of(main)["NVIDIA_MIG_MONITOR_DEVICES"] == "all"
    assert main["securityContext"] == _unprivileged_root("SYS_ADMIN")


def test_agent_volume_mounts_device_list_gets_sys_admin() -> None:
    env = [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
    operator = {"mig": {"strategy": "none"}, "cdi": {"enabled": False}, "devicePlugin": {"env": env}}
    assert _agent_security(operator) == _unprivileged_root("SYS_ADMIN")


def test_agent_config_managers_run_as_the_image_user_and_as_the_plugins_user() -> None:
    ds = _ds(with_agents(_with_config(), implementation="agents"))
    init = container(ds, "config-manager-init")
    assert init["securityContext"] == {
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "runAsNonRoot": True,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # the sidecar signals the plugin, which the kernel allows between processes of one user
    assert container(ds, "config-manager")["securityContext"] == _unprivileged_root()
    assert pod_of(ds)["shareProcessNamespace"] is True


def test_nvidia_config_managers_keep_nvidias_security() -> None:
    ds = _ds(_with_config())
    assert "securityContext" not in container(ds, "config-manager-init")
    assert container(ds, "config-manager")["securityContext"] == {"privileged": True}


def test_per_operand_override_selects_nvidia() -> None:
    objects = render_operand(device_plugin.render, with_agents(overrides={"devicePlugin": "nvidia"}))
    assert find(objects, "ConfigMap", "nvidia-device-plugin-entrypoint")
    assert container(find(objects, "DaemonSet"), "nvidia-device-plugin")["image"] == IMAGE


@pytest.mark.parametrize(
    "document",
    [
        NVIDIA,
        _with_config(),
        with_agents(_with_config(), implementation="agents"),
        _doc({"cdi": {"enabled": False}, "mig": {"strategy": "none"}}),
        _doc({"cdi": {"nriPluginEnabled": True}, "gds": {"enabled": True}, "gdrcopy": {"enabled": True}}),
        _doc({"daemonsets": {"updateStrategy": "OnDelete", "labels": {"team": "gpu"}}}),
    ],
)
def test_schema_valid(document: dict) -> None:
    assert_valid(render_operand(device_plugin.render, document))
