"""gpu-feature-discovery against reference/gpu-operator.md §3.8, agents.md §1.1 and TransformGPUDiscoveryPlugin."""

from __future__ import annotations

import pytest
import yaml

from gpu_operator.render.operands import gpu_feature_discovery
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
LABELS = {"app": "gpu-feature-discovery", "app.kubernetes.io/part-of": "nvidia-gpu"}
TIME_SLICING = {"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
CONFIGS = {"devicePlugin": {"ts": TIME_SLICING}}


def _with_config(**operator: object) -> dict:
    plugin = {"config": {"name": "plugin-configs", "default": "ts"}, **operator}
    return {**NVIDIA, "operator": {"devicePlugin": plugin}, "configs": CONFIGS}


def _ds(document: dict) -> dict:
    return find(render_operand(gpu_feature_discovery.render, document), "DaemonSet")


def test_disabled_renders_nothing() -> None:
    assert render_operand(gpu_feature_discovery.render, {"operator": {"gfd": {"enabled": False}}}) == []


def test_objects_in_upstream_order() -> None:
    objects = render_operand(gpu_feature_discovery.render, NVIDIA)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-gpu-feature-discovery"),
        ("Role", "nvidia-gpu-feature-discovery"),
        ("RoleBinding", "nvidia-gpu-feature-discovery"),
        ("ClusterRole", "nvidia-gpu-feature-discovery"),
        ("ClusterRoleBinding", "nvidia-gpu-feature-discovery"),
        ("DaemonSet", "gpu-feature-discovery"),
    ]
    assert_valid(objects)


def test_rbac_rules() -> None:
    objects = render_operand(gpu_feature_discovery.render, NVIDIA)
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"],
         "verbs": ["get", "list", "watch", "create", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    ]
    subject = {"kind": "ServiceAccount", "name": "nvidia-gpu-feature-discovery", "namespace": "gpu-operator"}
    assert find(objects, "RoleBinding")["subjects"] == [subject]
    assert find(objects, "RoleBinding")["roleRef"]["kind"] == "Role"
    assert find(objects, "ClusterRoleBinding")["subjects"] == [subject]


def test_daemonset_matches_upstream() -> None:
    ds = _ds(NVIDIA)
    pod = pod_of(ds)
    assert {k: ds["metadata"]["labels"][k] for k in LABELS} == LABELS
    assert ds["spec"]["selector"]["matchLabels"] == LABELS
    assert ds["spec"]["template"]["metadata"]["labels"] == LABELS
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}
    assert pod["serviceAccountName"] == "nvidia-gpu-feature-discovery"
    assert pod["runtimeClassName"] == "nvidia"
    assert init_names(ds) == ["toolkit-validation"]
    assert mounts(container(ds, "toolkit-validation")) == {"run-nvidia": "/run/nvidia"}
    assert [c["name"] for c in pod["containers"]] == ["gpu-feature-discovery"]
    main = container(ds, "gpu-feature-discovery")
    assert main["image"] == IMAGE
    assert main["command"] == ["gpu-feature-discovery"]
    assert main["securityContext"] == {"privileged": True}
    assert env_of(main) == {
        "GFD_SLEEP_INTERVAL": "60s",
        "GFD_FAIL_ON_INIT_ERROR": "true",
        "NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "POD_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        "MIG_STRATEGY": "single",
        "NVIDIA_MIG_MONITOR_DEVICES": "all",
    }
    assert main["volumeMounts"] == [
        {"name": "output-dir", "mountPath": "/etc/kubernetes/node-feature-discovery/features.d"},
        {"name": "host-sys", "mountPath": "/sys", "readOnly": True},
    ]
    assert volume_paths(ds) == {
        "output-dir": "/etc/kubernetes/node-feature-discovery/features.d",
        "host-sys": "/sys",
        "run-nvidia": "/run/nvidia",
    }


def test_daemonsets_labels_never_touch_the_selector_labels() -> None:
    ds = _ds({**NVIDIA, "operator": {"daemonsets": {"labels": {"app.kubernetes.io/part-of": "other", "team": "gpu"}}}})
    assert ds["spec"]["template"]["metadata"]["labels"] == {**LABELS, "team": "gpu"}
    assert ds["spec"]["selector"]["matchLabels"] == LABELS


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("none", {"MIG_STRATEGY": "none"}),
        ("single", {"MIG_STRATEGY": "single", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
        ("mixed", {"MIG_STRATEGY": "mixed", "NVIDIA_MIG_MONITOR_DEVICES": "all"}),
    ],
)
def test_mig_strategy_env(strategy: str, expected: dict[str, str]) -> None:
    main = container(_ds({**NVIDIA, "operator": {"mig": {"strategy": strategy}}}), "gpu-feature-discovery")
    assert {k: v for k, v in env_of(main).items() if "MIG" in k} == expected


def test_plugin_config_shares_the_device_plugin_configmap_and_label() -> None:
    ds = _ds(_with_config())
    pod = pod_of(ds)
    assert init_names(ds) == ["toolkit-validation", "config-manager-init"]
    assert [c["name"] for c in pod["containers"]] == ["gpu-feature-discovery", "config-manager"]
    assert pod["shareProcessNamespace"] is True
    main = container(ds, "gpu-feature-discovery")
    assert env_of(main)["CONFIG_FILE"] == "/config/config.yaml"
    assert mounts(main)["config"] == "/config"
    assert mounts(main)["plugin-configs"] == "/available-configs"
    sidecar = container(ds, "config-manager")
    assert sidecar["image"] == IMAGE
    assert sidecar["command"] == ["config-manager"]
    sidecar_env = env_of(sidecar)
    assert sidecar_env["NODE_LABEL"] == "nvidia.com/device-plugin.config"
    assert sidecar_env["PROCESS_TO_SIGNAL"] == "gpu-feature-discovery"
    assert sidecar_env["DEFAULT_CONFIG"] == "ts"
    assert sidecar_env["FALLBACK_STRATEGIES"] == "empty"
    assert pod["volumes"][-2:] == [
        {"name": "plugin-configs", "configMap": {"name": "plugin-configs"}},
        {"name": "config", "emptyDir": {}},
    ]


def test_without_config_name_no_config_manager() -> None:
    ds = _ds(NVIDIA)
    assert "shareProcessNamespace" not in pod_of(ds)
    assert "CONFIG_FILE" not in env_of(container(ds, "gpu-feature-discovery"))


def test_configmap_created_here_only_without_a_device_plugin() -> None:
    with_plugin = render_operand(gpu_feature_discovery.render, _with_config())
    assert not [o for o in with_plugin if o["kind"] == "ConfigMap"]
    without_plugin = render_operand(gpu_feature_discovery.render, _with_config(enabled=False))
    configmap = find(without_plugin, "ConfigMap", "plugin-configs")
    assert yaml.safe_load(configmap["data"]["ts"])["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "devices": "all", "replicas": 2}
    ]
    assert [o["kind"] for o in without_plugin][-2:] == ["ConfigMap", "DaemonSet"]
    assert_valid(without_plugin)


def test_nri_plugin_annotates_the_gfd_container_only() -> None:
    document = _with_config()
    document["operator"]["cdi"] = {"nriPluginEnabled": True}
    ds = _ds(document)
    assert "runtimeClassName" not in pod_of(ds)
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.gpu-feature-discovery": "management.nvidia.com/gpu=all"
    }


def test_crio_without_cdi_gets_no_runtime_class() -> None:
    document = {**NVIDIA, "cluster": {"containerRuntime": "crio"}, "operator": {"cdi": {"enabled": False}}}
    assert "runtimeClassName" not in pod_of(_ds(document))


def test_agent_keeps_gfd_env_and_runs_config_manager_from_the_agents_image() -> None:
    document = {
        "agents": {"image": {"repository": "ghcr.io/example/agents", "tag": "1.2.3"}},
        "operator": {"devicePlugin": {"config": {"name": "plugin-configs"}}},
    }
    ds = _ds(document)
    main = container(ds, "gpu-feature-discovery")
    assert main["image"] == "ghcr.io/example/agents:1.2.3"
    assert main["command"] == ["gpu-operator-agent", "feature-discovery"]
    variables = env_of(main)
    assert variables["GFD_SLEEP_INTERVAL"] == "60s"
    assert variables["GFD_FAIL_ON_INIT_ERROR"] == "true"
    assert variables["POD_NAME"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}
    assert mounts(main)["output-dir"] == "/etc/kubernetes/node-feature-discovery/features.d"
    for name in ("config-manager-init", "config-manager"):
        assert container(ds, name)["image"] == "ghcr.io/example/agents:1.2.3"
        assert container(ds, name)["command"] == ["gpu-operator-agent", "config-manager"]
    assert env_of(container(ds, "config-manager"))["PROCESS_TO_SIGNAL"] == "gpu-operator-agent feature-discovery"
    assert_valid([ds])


def test_agent_is_unprivileged_root_and_asks_the_runtime_for_gpus() -> None:
    ds = _ds(with_agents({"operator": {"mig": {"strategy": "none"}}}))
    main = container(ds, "gpu-feature-discovery")
    # root for the features.d file, CAP_SYS_ADMIN for the full PCI config space (vGPU labels), GPUs via the runtime
    assert main["securityContext"] == {
        "runAsUser": 0,
        "runAsGroup": 0,
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert env_of(main)["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert pod_of(ds)["runtimeClassName"] == "nvidia"
    nvidia = container(_ds({**NVIDIA, "operator": {"mig": {"strategy": "none"}}}), "gpu-feature-discovery")
    assert "NVIDIA_VISIBLE_DEVICES" not in env_of(nvidia)
    assert env_of(main) == {**env_of(nvidia), "NVIDIA_VISIBLE_DEVICES": "all", "GFD_PUBLISH_GPU_DEVICES": "true"}


def test_agent_config_manager_sidecar_runs_as_gfds_user() -> None:
    ds = _ds(with_agents(_with_config(), implementation="agents"))
    assert container(ds, "config-manager-init")["securityContext"]["runAsUser"] == 65532
    sidecar = container(ds, "config-manager")["securityContext"]
    assert (sidecar["runAsUser"], sidecar["capabilities"]) == (0, {"drop": ["ALL"]})
    assert sidecar["privileged"] is False


def test_gfd_override_to_nvidia() -> None:
    main = container(_ds(with_agents(overrides={"gfd": "nvidia"})), "gpu-feature-discovery")
    assert main["image"] == IMAGE
    assert main["command"] == ["gpu-feature-discovery"]


def test_user_settings_reach_the_gfd_container() -> None:
    document = {**NVIDIA, "operator": {"gfd": {
        "env": [{"name": "GFD_SLEEP_INTERVAL", "value": "30s"}],
        "args": ["--oneshot"],
        "resources": {"limits": {"memory": "128Mi"}},
        "version": "v0.20.1",
    }}}
    main = container(_ds(document), "gpu-feature-discovery")
    assert main["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.1"
    assert env_of(main)["GFD_SLEEP_INTERVAL"] == "30s"
    assert main["args"] == ["--oneshot"]
    assert main["resources"] == {"limits": {"memory": "128Mi"}}


@pytest.mark.parametrize(
    "document",
    [
        NVIDIA,
        with_agents(),
        _with_config(),
        _with_config(enabled=False),
        {**NVIDIA, "operator": {"cdi": {"nriPluginEnabled": True}, "mig": {"strategy": "none"}}},
    ],
)
def test_schema_valid(document: dict) -> None:
    assert_valid(render_operand(gpu_feature_discovery.render, document))


def test_gpu_device_inventory_with_the_agent() -> None:
    objects = render_operand(gpu_feature_discovery.render, with_agents())
    crd = objects[0]
    assert (crd["kind"], crd["metadata"]["name"]) == ("CustomResourceDefinition", "gpudevices.gpu.pulumi-gpu-operator.io")
    cluster_role = find(objects, "ClusterRole")
    assert cluster_role["rules"][-1] == {
        "apiGroups": ["gpu.pulumi-gpu-operator.io"], "resources": ["gpudevices"],
        "verbs": ["get", "list", "create", "update", "delete"],
    }
    main = container(find(objects, "DaemonSet"), "gpu-feature-discovery")
    assert env_of(main)["GFD_PUBLISH_GPU_DEVICES"] == "true"
    assert_valid(objects)


@pytest.mark.parametrize("document", [
    {},
    with_agents(gpuDevices=False),
    with_agents(overrides={"gfd": "nvidia"}),
])
def test_no_gpu_device_inventory_without_the_agent_or_when_off(document: dict) -> None:
    objects = render_operand(gpu_feature_discovery.render, document)
    assert all(o["kind"] != "CustomResourceDefinition" for o in objects)
    # NVIDIA's GFD reads nodes; our agent reads its node only as the owner of GpuDevice objects
    cluster_roles = [o["rules"] for o in objects if o["kind"] == "ClusterRole"]
    assert cluster_roles == ([] if document == with_agents(gpuDevices=False) else [
        [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]
    ])
    assert "GFD_PUBLISH_GPU_DEVICES" not in env_of(container(find(objects, "DaemonSet"), "gpu-feature-discovery"))
