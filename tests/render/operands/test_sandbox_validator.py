"""state-sandbox-validation against reference/gpu-operator.md §3.12, §5.2 and upstream TransformSandboxValidator."""

from __future__ import annotations

from gpu_operator.render.operands import sandbox_validator
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

ENABLED = {"operator": {"sandboxWorkloads": {"enabled": True, "defaultWorkload": "vm-passthrough"}}}
NVIDIA = {**ENABLED, "agents": {"implementation": "nvidia"}}
CHECKS = ["cc-manager-validation", "vfio-pci-validation", "vgpu-manager-validation", "vgpu-devices-validation"]


def _daemonset(document: dict) -> dict:
    return find(render_operand(sandbox_validator.render, document), "DaemonSet")


def test_absent_without_sandbox_workloads() -> None:
    assert render_operand(sandbox_validator.render) == []


def test_present_in_both_modes() -> None:
    for mode in ("kubevirt", "kata"):
        document = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": mode}}}
        assert find(render_operand(sandbox_validator.render, document), "DaemonSet")


def test_objects_in_upstream_order_without_the_scc_role() -> None:
    objects = render_operand(sandbox_validator.render, ENABLED)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-sandbox-validator"),
        ("ClusterRole", "nvidia-sandbox-validator"),
        ("ClusterRoleBinding", "nvidia-sandbox-validator"),
        ("DaemonSet", "nvidia-sandbox-validator"),
    ]
    assert find(objects, "ClusterRole")["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = _daemonset(NVIDIA)
    pod = pod_of(ds)
    labels = {"app": "nvidia-sandbox-validator", "app.kubernetes.io/part-of": "gpu-operator"}
    assert ds["spec"]["selector"]["matchLabels"] == labels
    assert ds["spec"]["template"]["metadata"]["labels"] == labels
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.sandbox-validator": "true"}
    assert pod["serviceAccountName"] == "nvidia-sandbox-validator"
    assert "runtimeClassName" not in pod
    assert init_names(ds) == CHECKS
    assert volume_paths(ds) == {
        "run-nvidia-validations": "/run/nvidia/validations",
        "driver-install-path": "/run/nvidia/driver",
        "host-root": "/",
    }
    main = container(ds, "nvidia-sandbox-validator")
    assert main["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert main["command"] == ["sh", "-c"] and "sleep infinity" in main["args"][0]
    assert main["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert main["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/sh", "-c", "rm -f /run/nvidia/validations/*"]
    assert mounts(main) == {"run-nvidia-validations": "/run/nvidia/validations"}


def test_checks_run_nvidia_validator_with_their_component() -> None:
    ds = _daemonset(NVIDIA)
    for name in CHECKS:
        check = container(ds, name)
        assert check["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
        assert (check["command"], check["args"]) == (["sh", "-c"], ["nvidia-validator"])
        values = env_of(check)
        assert values["COMPONENT"] == name.removesuffix("-validation")
        assert values["WITH_WAIT"] == "true"
        assert values["NODE_NAME"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}
        assert check["securityContext"]["privileged"] is True
        assert check["securityContext"]["runAsUser"] == 0
        assert check["volumeMounts"][-1] == {
            "name": "run-nvidia-validations",
            "mountPath": "/run/nvidia/validations",
            "mountPropagation": "Bidirectional",
        }
    assert mounts(container(ds, "vgpu-manager-validation")) == {
        "host-root": "/host", "driver-install-path": "/run/nvidia/driver",
        "run-nvidia-validations": "/run/nvidia/validations",
    }
    assert "seLinuxOptions" not in container(ds, "vgpu-devices-validation")["securityContext"]


def test_checks_always_run_nvidias_validator() -> None:
    # our validator agent has no sandbox components, so the agents setting does not reach this operand
    ours, nvidia = _daemonset(ENABLED), _daemonset(NVIDIA)
    assert ours == nvidia
    for name in CHECKS:
        check = container(ours, name)
        assert (check["command"], check["args"]) == (["sh", "-c"], ["nvidia-validator"])
        assert check["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
        assert check["securityContext"]["privileged"] is True
    assert container(ours, "nvidia-sandbox-validator")["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"


def test_default_workload_reaches_the_vm_checks_only() -> None:
    ds = _daemonset(ENABLED)
    for name in CHECKS[1:]:
        assert env_of(container(ds, name))["DEFAULT_GPU_WORKLOAD_CONFIG"] == "vm-passthrough"
    assert "DEFAULT_GPU_WORKLOAD_CONFIG" not in env_of(container(ds, "cc-manager-validation"))


def test_per_check_env() -> None:
    document = {"operator": {
        "sandboxWorkloads": {"enabled": True},
        "validator": {
            "vfioPCI": {"env": [{"name": "VFIO_DEBUG", "value": "1"}]},
            "vgpuManager": {"env": [{"name": "DEFAULT_GPU_WORKLOAD_CONFIG", "value": "vm-vgpu"}]},
            "vgpuDevices": {"env": [{"name": "SLEEP_INTERVAL_SECONDS", "value": "10"}]},
            "env": [{"name": "MAIN_ONLY", "value": "x"}],
        },
    }}
    ds = _daemonset(document)
    assert env_of(container(ds, "vfio-pci-validation"))["VFIO_DEBUG"] == "1"
    assert env_of(container(ds, "vgpu-manager-validation"))["DEFAULT_GPU_WORKLOAD_CONFIG"] == "vm-vgpu"
    assert env_of(container(ds, "vgpu-devices-validation"))["SLEEP_INTERVAL_SECONDS"] == "10"
    assert env_of(container(ds, "vgpu-devices-validation"))["DEFAULT_GPU_WORKLOAD_CONFIG"] == "container"
    assert "VFIO_DEBUG" not in env_of(container(ds, "vgpu-manager-validation"))
    assert env_of(container(ds, "nvidia-sandbox-validator")) == {"MAIN_ONLY": "x"}


def test_cc_manager_check_follows_cc_manager_enabled() -> None:
    document = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}, "ccManager": {"enabled": False}}}
    assert init_names(_daemonset(document)) == CHECKS[1:]


def test_validator_settings_apply_to_every_container() -> None:
    document = {**NVIDIA, "operator": {**NVIDIA["operator"], "validator": {
        "repository": "registry.example.com", "image": "validator", "version": "v1",
        "imagePullPolicy": "Always", "imagePullSecrets": ["regcred"], "resources": {"limits": {"cpu": "1"}},
    }}}
    ds = _daemonset(document)
    for item in [*pod_of(ds)["initContainers"], *pod_of(ds)["containers"]]:
        assert item["image"] == "registry.example.com/validator:v1"
        assert item["imagePullPolicy"] == "Always"
        assert item["resources"] == {"limits": {"cpu": "1"}}
    assert pod_of(ds)["imagePullSecrets"] == [{"name": "regcred"}]
    assert_valid([ds])
