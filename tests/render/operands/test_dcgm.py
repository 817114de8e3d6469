"""state-dcgm against reference/gpu-operator.md §3.6."""

from __future__ import annotations

from gpu_operator.render.operands import dcgm
from tests.render.operands.helpers import (
    assert_valid,
    container,
    find,
    init_names,
    pod_of,
    render_operand,
    volume_paths,
)

ENABLED = {"operator": {"dcgm": {"enabled": True}}}


def test_disabled_by_default_renders_nothing() -> None:
    assert render_operand(dcgm.render) == []


def test_objects_in_upstream_order() -> None:
    objects = render_operand(dcgm.render, ENABLED)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-dcgm"),
        ("DaemonSet", "nvidia-dcgm"),
        ("Service", "nvidia-dcgm"),
    ]
    assert_valid(objects)


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(dcgm.render, ENABLED), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-dcgm"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.dcgm": "true"}
    assert pod["serviceAccountName"] == "nvidia-dcgm"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert init_names(ds) == ["toolkit-validation"]
    ctr = container(ds, "nvidia-dcgm-ctr")
    assert ctr["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
    assert ctr["securityContext"]["privileged"] is True
    assert ctr["ports"] == [{"name": "dcgm", "containerPort": 5555}]
    assert ctr["livenessProbe"] == {"tcpSocket": {"port": 5555}, "initialDelaySeconds": 15}
    assert ctr["readinessProbe"] == ctr["livenessProbe"]
    assert volume_paths(ds) == {"run-nvidia": "/run/nvidia"}


def test_service_keeps_traffic_on_the_node() -> None:
    svc = find(render_operand(dcgm.render, ENABLED), "Service")
    assert svc["spec"]["internalTrafficPolicy"] == "Local"
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "dcgm", "port": 5555, "protocol": "TCP"}]
    assert svc["spec"]["selector"] == {"app": "nvidia-dcgm"}


def test_user_settings_reach_the_container() -> None:
    document = {"operator": {"dcgm": {
        "enabled": True, "env": [{"name": "DCGM_LOG", "value": "debug"}], "args": ["-n"], "hostNetwork": True,
        "resources": {"limits": {"memory": "1Gi"}}, "imagePullSecrets": ["ngc"],
    }}}
    ds = find(render_operand(dcgm.render, document), "DaemonSet")
    ctr = container(ds, "nvidia-dcgm-ctr")
    assert ctr["env"] == [{"name": "DCGM_LOG", "value": "debug"}]
    assert ctr["args"] == ["-n"]
    assert ctr["resources"] == {"limits": {"memory": "1Gi"}}
    assert pod_of(ds)["hostNetwork"] is True
    assert pod_of(ds)["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert {"name": "ngc"} in pod_of(ds)["imagePullSecrets"]
