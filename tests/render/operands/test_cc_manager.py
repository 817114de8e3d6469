"""state-cc-manager against reference/gpu-operator.md §2, §3.12, §10 and upstream assets/state-cc-manager."""

from __future__ import annotations

import yaml

from gpu_operator.render.operands import cc_manager
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
from tests.support.reference import reference_file

KATA = {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}}}


def _with(**section: object) -> dict:
    return {"operator": {"sandboxWorkloads": {"enabled": True, "mode": "kata"}, "ccManager": section}}


def test_only_in_kata_mode_and_when_enabled() -> None:
    assert render_operand(cc_manager.render) == []
    assert render_operand(cc_manager.render, {"operator": {"sandboxWorkloads": {"enabled": True}}}) == []
    assert render_operand(cc_manager.render, _with(enabled=False)) == []
    assert render_operand(cc_manager.render, {"operator": {"ccManager": {"enabled": True}}}) == []


def test_objects_and_rbac() -> None:
    objects = render_operand(cc_manager.render, KATA)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-cc-manager"),
        ("Role", "nvidia-cc-manager"),
        ("RoleBinding", "nvidia-cc-manager"),
        ("ClusterRole", "nvidia-cc-manager"),
        ("ClusterRoleBinding", "nvidia-cc-manager"),
        ("DaemonSet", "nvidia-cc-manager"),
    ]
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch", "watch"]}
    ]
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(cc_manager.render, KATA), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"name": "nvidia-cc-manager"}
    assert ds["spec"]["template"]["metadata"]["labels"] == {"name": "nvidia-cc-manager"}
    assert ds["metadata"]["labels"]["app"] == "nvidia-cc-manager"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.cc-manager": "true"}
    assert pod["serviceAccountName"] == "nvidia-cc-manager"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert "runtimeClassName" not in pod
    assert init_names(ds) == []
    ctr = container(ds, "nvidia-cc-manager")
    assert ctr["image"] == "nvcr.io/nvidia/cloud-native/k8s-cc-manager:v0.4.3"
    assert env_of(ctr) == {
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "NVIDIA_VISIBLE_DEVICES": "void",
        "DEFAULT_CC_MODE": "on",
    }
    assert ctr["lifecycle"]["preStop"]["exec"]["command"] == [
        "/bin/rm", "-f", "/run/nvidia/validations/.cc-manager-ctr-ready"
    ]
    assert ctr["resources"] == {"limits": {"memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}}
    assert ctr["securityContext"] == {"privileged": True, "seLinuxOptions": {"level": "s0"}}
    assert mounts(ctr) == {"host-sys": "/sys", "run-nvidia": "/run/nvidia"}
    assert volume_paths(ds) == {"host-sys": "/sys", "run-nvidia": "/run/nvidia"}


def test_default_mode_matches_the_chart_and_is_configurable() -> None:
    values = yaml.safe_load(reference_file("helm-values/gpu-operator-v26.7.0-values.yaml").read_text())
    ds = find(render_operand(cc_manager.render, KATA), "DaemonSet")
    assert env_of(container(ds, "nvidia-cc-manager"))["DEFAULT_CC_MODE"] == values["ccManager"]["defaultMode"]
    ds = find(render_operand(cc_manager.render, _with(defaultMode="devtools")), "DaemonSet")
    assert env_of(container(ds, "nvidia-cc-manager"))["DEFAULT_CC_MODE"] == "devtools"


def test_user_env_comes_after_the_default_mode() -> None:
    ds = find(render_operand(cc_manager.render, _with(env=[{"name": "CC_CAPABLE_DEVICE_IDS", "value": "0x2331"}])),
              "DaemonSet")
    assert [e["name"] for e in container(ds, "nvidia-cc-manager")["env"]] == [
        "NODE_NAME", "NVIDIA_VISIBLE_DEVICES", "DEFAULT_CC_MODE", "CC_CAPABLE_DEVICE_IDS",
    ]


def test_selects_only_the_deploy_label_as_nvidia_v26() -> None:
    """NVIDIA's v26.7.0 assets/state-cc-manager/0500_daemonset.yaml selects only
    `nvidia.com/gpu.deploy.cc-manager=true`; the `nvidia.com/cc.capable=true` selector (and the NFD rule that set
    it) went away after v25.10.1, so nothing sets that label and a pod selecting it never schedules."""
    pod = pod_of(find(render_operand(cc_manager.render, {**KATA, "agents": {"implementation": "nvidia"}}), "DaemonSet"))
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.cc-manager": "true"}
