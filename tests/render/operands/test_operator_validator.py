"""state-operator-validation against reference/gpu-operator.md §3.3, §5.2 and NVIDIA's TransformValidator."""

from __future__ import annotations

import pytest

from gpu_operator.render.operands import operator_validator
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
NVIDIA = {"agents": {"implementation": "nvidia"}}
AGENTS = with_agents()
MAIN = "nvidia-operator-validator"
CHECKS = ["driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"]
NODE_NAME = {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}
NAMESPACE = {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
UNPRIVILEGED_ROOT = {
    "runAsUser": 0,
    "runAsGroup": 0,
    "privileged": False,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def validator_ds(document: dict | None = None) -> dict:
    return find(render_operand(operator_validator.render, document), "DaemonSet")


def with_operator(base: dict, **operator: object) -> dict:
    return {**base, "operator": operator}


def test_always_rendered_in_upstream_file_order() -> None:
    objects = render_operand(operator_validator.render)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-operator-validator"),
        ("Role", "nvidia-operator-validator"),
        ("ClusterRole", "nvidia-operator-validator"),
        ("RoleBinding", "nvidia-operator-validator"),
        ("ClusterRoleBinding", "nvidia-operator-validator"),
        ("DaemonSet", "nvidia-operator-validator"),
    ]
    assert_valid(objects)


def test_rbac_without_cluster_policy_finalizers() -> None:
    objects = render_operand(operator_validator.render)
    assert find(objects, "Role")["rules"] == [
        {
            "apiGroups": [""], "resources": ["pods"],
            "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"],
        },
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list", "watch"]},
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    ]
    subject = [{"kind": "ServiceAccount", "name": "nvidia-operator-validator", "namespace": "gpu-operator"}]
    assert find(objects, "RoleBinding")["subjects"] == subject
    assert find(objects, "ClusterRoleBinding")["subjects"] == subject
    assert find(objects, "ClusterRoleBinding")["roleRef"]["kind"] == "ClusterRole"
    assert not any("nvidia.com" in r["apiGroups"] for o in objects for r in o.get("rules", []))


def test_daemonset_matches_upstream() -> None:
    ds = validator_ds()
    pod = pod_of(ds)
    labels = {"app": "nvidia-operator-validator", "app.kubernetes.io/part-of": "gpu-operator"}
    assert ds["spec"]["selector"]["matchLabels"] == labels
    assert ds["spec"]["template"]["metadata"]["labels"] == labels
    assert {k: ds["metadata"]["labels"][k] for k in labels} == labels
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.operator-validator": "true"}
    assert pod["serviceAccountName"] == "nvidia-operator-validator"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["priorityClassName"] == "system-node-critical"
    assert init_names(ds) == CHECKS
    assert volume_paths(ds) == {
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-dir": "/run/nvidia/driver",
        "host-root": "/",
        "host-dev-char": "/dev/char",
    }
    volumes = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    assert volumes["run-nvidia-validations"]["type"] == "DirectoryOrCreate"


def test_main_container_sleeps_and_clears_status_files_on_stop() -> None:
    main = container(validator_ds(AGENTS), MAIN)
    assert main["image"] == AGENTS_IMAGE
    assert main["command"] == ["sh", "-c"]
    assert main["args"] == ["echo all validations are successful; sleep infinity"]
    pre_stop = ["/bin/sh", "-c", "rm -f /run/nvidia/validations/*-ready"]
    assert main["lifecycle"] == {"preStop": {"exec": {"command": pre_stop}}}
    assert mounts(main) == {"run-nvidia-validations": "/run/nvidia/validations"}


def test_nvidia_main_container_is_privileged_root_sharing_the_status_dir() -> None:
    main = container(validator_ds(NVIDIA), MAIN)
    assert main["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert main["volumeMounts"][0]["mountPropagation"] == "Bidirectional"


def test_agent_main_container_is_unprivileged_root() -> None:
    main = container(validator_ds(AGENTS), MAIN)
    assert main["securityContext"] == UNPRIVILEGED_ROOT
    # Bidirectional propagation needs a privileged container; the mount only carries status files
    assert main["volumeMounts"][0]["mountPropagation"] == "HostToContainer"


def test_every_nvidia_check_is_privileged_root_and_shares_the_status_dir() -> None:
    ds = validator_ds(NVIDIA)
    for name in CHECKS:
        check = container(ds, name)
        assert check["securityContext"]["privileged"] is True
        assert check["securityContext"]["runAsUser"] == 0
        assert mounts(check)["run-nvidia-validations"] == "/run/nvidia/validations"
        propagation = {m["name"]: m.get("mountPropagation") for m in check["volumeMounts"]}
        assert propagation["run-nvidia-validations"] == "Bidirectional"
    assert mounts(container(ds, "driver-validation")) == {
        "host-root": "/host",
        "driver-install-dir": "/run/nvidia/driver",
        "run-nvidia-validations": "/run/nvidia/validations",
        "host-dev-char": "/host-dev-char",
    }
    assert container(ds, "driver-validation")["securityContext"]["seLinuxOptions"] == {"level": "s0"}


def test_agent_checks_drop_privileged_except_the_driver_check() -> None:
    ds = validator_ds(AGENTS)
    driver = container(ds, "driver-validation")
    assert driver["securityContext"] == {"privileged": True, "runAsUser": 0, "seLinuxOptions": {"level": "s0"}}
    assert {m["name"]: m.get("mountPropagation") for m in driver["volumeMounts"]}["run-nvidia-validations"] == (
        "Bidirectional"
    )
    for name in ("toolkit-validation", "cuda-validation", "plugin-validation"):
        check = container(ds, name)
        assert check["securityContext"] == UNPRIVILEGED_ROOT, name
        assert check["volumeMounts"] == [{
            "name": "run-nvidia-validations",
            "mountPath": "/run/nvidia/validations",
            "mountPropagation": "HostToContainer",
        }]
    # the toolkit check still sees every GPU through the NVIDIA runtime
    assert env_of(container(ds, "toolkit-validation"))["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert pod_of(ds)["runtimeClassName"] == "nvidia"


def test_check_env() -> None:
    ds = validator_ds()
    assert env_of(container(ds, "driver-validation")) == {
        "WITH_WAIT": "true", "COMPONENT": "driver", "OPERATOR_NAMESPACE": NAMESPACE,
    }
    assert env_of(container(ds, "toolkit-validation")) == {
        "NVIDIA_VISIBLE_DEVICES": "all", "WITH_WAIT": "false", "COMPONENT": "toolkit",
    }
    assert env_of(container(ds, "cuda-validation")) == {
        "WITH_WAIT": "false",
        "COMPONENT": "cuda",
        "NODE_NAME": NODE_NAME,
        "OPERATOR_NAMESPACE": NAMESPACE,
        "VALIDATOR_IMAGE": VALIDATOR_IMAGE,
        "VALIDATOR_IMAGE_PULL_POLICY": "IfNotPresent",
        "VALIDATOR_RUNTIME_CLASS": "nvidia",
    }
    assert env_of(container(ds, "plugin-validation")) == {
        "COMPONENT": "plugin",
        "WITH_WAIT": "false",
        "WITH_WORKLOAD": "false",
        "MIG_STRATEGY": "single",
        "NODE_NAME": NODE_NAME,
        "OPERATOR_NAMESPACE": NAMESPACE,
        "VALIDATOR_IMAGE": VALIDATOR_IMAGE,
        "VALIDATOR_IMAGE_PULL_POLICY": "IfNotPresent",
        "VALIDATOR_RUNTIME_CLASS": "nvidia",
    }


def test_checks_run_our_agent_with_an_agents_image() -> None:
    ds = validator_ds(AGENTS)
    for name in CHECKS:
        check = container(ds, name)
        assert check["image"] == AGENTS_IMAGE
        assert check["command"] == ["gpu-operator-agent", "validator"]
        assert "args" not in check


@pytest.mark.parametrize("document", [{}, NVIDIA, with_agents(implementation="nvidia")])
def test_checks_run_nvidia_validator_without_an_agents_image_or_with_implementation_nvidia(document: dict) -> None:
    ds = validator_ds(document)
    for name in CHECKS:
        check = container(ds, name)
        assert check["image"] == VALIDATOR_IMAGE
        assert check["command"] == ["sh", "-c"]
        assert check["args"] == ["nvidia-validator"]
    assert container(ds, MAIN)["image"] == VALIDATOR_IMAGE
    assert container(ds, MAIN)["imagePullPolicy"] == "IfNotPresent"


def test_workload_image_is_always_nvidias_validator() -> None:
    document = with_agents({"agents": {"image": {"pullSecrets": ["agents-pull"]}}, "operator": {"validator": {
        "repository": "registry.example/nvidia", "version": "v26.7.1", "imagePullPolicy": "Always",
        "imagePullSecrets": ["ngc", "mirror"],
    }}})
    ds = validator_ds(document)
    for name in ("cuda-validation", "plugin-validation"):
        variables = env_of(container(ds, name))
        assert variables["VALIDATOR_IMAGE"] == "registry.example/nvidia/gpu-operator:v26.7.1"
        assert variables["VALIDATOR_IMAGE_PULL_POLICY"] == "Always"
        assert variables["VALIDATOR_IMAGE_PULL_SECRETS"] == "ngc,mirror"
    assert container(ds, "cuda-validation")["image"] == AGENTS_IMAGE
    assert pod_of(ds)["imagePullSecrets"] == [{"name": "agents-pull"}]


def test_nvidia_pull_secrets_reach_the_pod() -> None:
    ds = validator_ds(with_operator(NVIDIA, validator={"imagePullSecrets": ["ngc"]}))
    assert pod_of(ds)["imagePullSecrets"] == [{"name": "ngc"}]


def test_plugin_validation_removed_without_device_plugin() -> None:
    ds = validator_ds({"operator": {"devicePlugin": {"enabled": False}}})
    assert init_names(ds) == ["driver-validation", "toolkit-validation", "cuda-validation"]


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_mig_strategy(strategy: str) -> None:
    ds = validator_ds({"operator": {"mig": {"strategy": strategy}}})
    assert env_of(container(ds, "plugin-validation"))["MIG_STRATEGY"] == strategy


def test_custom_runtime_class() -> None:
    ds = validator_ds({"operator": {"operator": {"runtimeClass": "nvidia-gpu"}}})
    assert pod_of(ds)["runtimeClassName"] == "nvidia-gpu"
    assert env_of(container(ds, "cuda-validation"))["VALIDATOR_RUNTIME_CLASS"] == "nvidia-gpu"


def test_nri_plugin_annotates_toolkit_validation_instead_of_runtime_class() -> None:
    ds = validator_ds({"operator": {"cdi": {"nriPluginEnabled": True}}})
    pod = pod_of(ds)
    assert "runtimeClassName" not in pod
    assert ds["spec"]["template"]["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.toolkit-validation": "management.nvidia.com/gpu=all",
    }
    for name in ("cuda-validation", "plugin-validation"):
        assert "VALIDATOR_RUNTIME_CLASS" not in env_of(container(ds, name))


@pytest.mark.parametrize(("document", "runtime_class"), [
    ({"cluster": {"containerRuntime": "crio"}}, "nvidia"),
    ({"cluster": {"containerRuntime": "crio"}, "operator": {"cdi": {"enabled": False}}}, None),
    ({"cluster": {"containerRuntime": "docker"}, "operator": {"cdi": {"enabled": False}}}, "nvidia"),
    ({"operator": {"cdi": {"enabled": False}}}, "nvidia"),
])
def test_runtime_class_per_runtime_and_cdi(document: dict, runtime_class: str | None) -> None:
    ds = validator_ds(document)
    assert pod_of(ds).get("runtimeClassName") == runtime_class
    assert env_of(container(ds, "cuda-validation")).get("VALIDATOR_RUNTIME_CLASS") == runtime_class
    assert "annotations" not in ds["spec"]["template"]["metadata"]


def test_per_check_env_and_main_container_settings() -> None:
    def var(name: str, value: str) -> dict:
        return {"env": [{"name": name, "value": value}]}

    document = {"operator": {"validator": {
        "driver": var("DISABLE_DEV_CHAR_SYMLINK_CREATION", "true"),
        "toolkit": var("WITH_WAIT", "true"),
        "cuda": var("CUDA_EXTRA", "1"),
        "plugin": var("WITH_WORKLOAD", "true"),
        "env": [{"name": "MAIN_EXTRA", "value": "x"}],
        "args": ["sleep infinity"],
        "resources": {"requests": {"cpu": "10m"}},
    }}}
    ds = validator_ds(document)
    assert env_of(container(ds, "driver-validation"))["DISABLE_DEV_CHAR_SYMLINK_CREATION"] == "true"
    assert env_of(container(ds, "toolkit-validation"))["WITH_WAIT"] == "true"
    assert env_of(container(ds, "cuda-validation"))["CUDA_EXTRA"] == "1"
    assert env_of(container(ds, "plugin-validation"))["WITH_WORKLOAD"] == "true"
    assert "CUDA_EXTRA" not in env_of(container(ds, "plugin-validation"))
    main = container(ds, MAIN)
    assert env_of(main) == {"MAIN_EXTRA": "x"}
    assert main["args"] == ["sleep infinity"]
    for name in [*CHECKS, MAIN]:
        assert container(ds, name)["resources"] == {"requests": {"cpu": "10m"}}


def test_driver_install_dir_moves_driver_validation() -> None:
    ds = validator_ds({"operator": {"hostPaths": {"driverInstallDir": "/opt/nvidia/driver"}}})
    init = container(ds, "driver-validation")
    assert volume_paths(ds)["driver-install-dir"] == "/opt/nvidia/driver"
    assert mounts(init)["driver-install-dir"] == "/opt/nvidia/driver"
    assert env_of(init)["DRIVER_INSTALL_DIR"] == env_of(init)["DRIVER_INSTALL_DIR_CTR_PATH"] == "/opt/nvidia/driver"
    assert "DRIVER_INSTALL_DIR" not in env_of(container(ds, "toolkit-validation"))


@pytest.mark.parametrize("document", [
    {},
    NVIDIA,
    AGENTS,
    {"cluster": {"containerRuntime": "crio"}, "operator": {"cdi": {"enabled": False}}},
    {"cluster": {"containerRuntime": "docker"}},
    {"operator": {"cdi": {"nriPluginEnabled": True}, "devicePlugin": {"enabled": False}}},
    {"operator": {"validator": {"imagePullSecrets": ["ngc"]}, "hostPaths": {"driverInstallDir": "/opt/nvidia/driver"}}},
])
def test_every_variant_is_schema_valid(document: dict) -> None:
    assert_valid(render_operand(operator_validator.render, document))


def test_dra_pools_beside_device_plugin_pools_get_a_validator_without_the_plugin_check() -> None:
    """A DRA node never advertises nvidia.com/gpu: the plugin check would hold its validator in Init forever."""
    from gpu_operator.config import load_config
    from gpu_operator.render import render
    from gpu_operator.render.aks.node_labels import pool_node_labels, rendered_deploy_operands
    from tests.e2e.placement import selects
    from tests.support.reference import REPO_ROOT
    from tests.support.schemas import validate_objects

    config = load_config(REPO_ROOT / "examples" / "configs" / "dra.yaml")
    objects = render(config)
    validators = {obj["metadata"]["name"]: obj for obj in objects
                  if obj["kind"] == "DaemonSet" and obj["metadata"]["name"].startswith(MAIN)}
    assert sorted(validators) == [MAIN, f"{MAIN}-dra"]
    assert validate_objects(validators.values()) == []
    assert init_names(validators[MAIN]) == CHECKS
    assert init_names(validators[f"{MAIN}-dra"]) == CHECKS[:3]
    assert validators[MAIN]["spec"]["selector"] != validators[f"{MAIN}-dra"]["spec"]["selector"]
    rendered = rendered_deploy_operands(objects)
    for pool in config.pools:
        labels = pool_node_labels(pool, config, rendered)
        where = [name for name, ds in validators.items() if selects(ds["spec"]["template"]["spec"], labels)]
        assert where == [f"{MAIN}-dra" if pool.gpu_allocation == "dra" else MAIN], pool.name
        # the MIG manager pauses the device plugin on a MIG change: the node keeps its validator
        paused = {**labels, "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"}
        if pool.gpu_allocation != "dra":
            assert selects(validators[MAIN]["spec"]["template"]["spec"], paused)


def test_without_dra_pools_there_is_one_validator() -> None:
    ds = validator_ds()
    assert "affinity" not in pod_of(ds)
    assert init_names(ds) == CHECKS
