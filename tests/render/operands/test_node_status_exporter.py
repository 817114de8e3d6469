"""state-node-status-exporter against reference/gpu-operator.md §3.10 and agents.md §6.1."""

from __future__ import annotations

from typing import Any

from gpu_operator.render.operands import node_status_exporter
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

ENABLED: dict[str, Any] = {"operator": {"nodeStatusExporter": {"enabled": True}}}
NVIDIA: dict[str, Any] = {**ENABLED, "agents": {"implementation": "nvidia"}}


def _exporter(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return container(find(objects, "DaemonSet"), "nvidia-node-status-exporter")


def test_disabled_by_default_renders_nothing() -> None:
    assert render_operand(node_status_exporter.render) == []


def test_objects_in_upstream_order() -> None:
    objects = render_operand(node_status_exporter.render, {**NVIDIA, "cluster": {"prometheusOperator": True}})
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ServiceAccount", "nvidia-node-status-exporter"),
        ("Role", "nvidia-node-status-exporter"),
        ("RoleBinding", "nvidia-node-status-exporter"),
        ("ClusterRole", "nvidia-node-status-exporter"),
        ("ClusterRoleBinding", "nvidia-node-status-exporter"),
        ("Service", "nvidia-node-status-exporter"),
        ("ServiceMonitor", "nvidia-node-status-exporter"),
        ("DaemonSet", "nvidia-node-status-exporter"),
    ]
    assert_valid(objects)


def test_rbac_rules() -> None:
    objects = render_operand(node_status_exporter.render, NVIDIA)
    assert find(objects, "Role")["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "list", "watch"]},
    ]
    assert find(objects, "ClusterRole")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    ]
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        binding = find(objects, kind)
        assert binding["roleRef"]["name"] == "nvidia-node-status-exporter"
        assert binding["subjects"][0]["name"] == "nvidia-node-status-exporter"


def test_service_and_service_monitor() -> None:
    objects = render_operand(node_status_exporter.render, {**NVIDIA, "cluster": {"prometheusOperator": True}})
    svc = find(objects, "Service")
    assert svc["spec"]["selector"] == {"app": "nvidia-node-status-exporter"}
    assert svc["spec"]["ports"] == [{"name": "node-status", "port": 8000, "targetPort": 8000, "protocol": "TCP"}]
    assert svc["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert find(objects, "ServiceMonitor")["spec"] == {
        "jobLabel": "node-status",
        "namespaceSelector": {"matchNames": ["gpu-operator"]},
        "selector": {"matchLabels": {"app": "nvidia-node-status-exporter"}},
        "endpoints": [{"port": "node-status", "path": "/metrics"}],
    }


def test_no_service_monitor_without_prometheus_operator() -> None:
    """NVIDIA creates it only where the ServiceMonitor CRD exists; plain AKS (our default) has none."""
    for document in (NVIDIA, {**NVIDIA, "cluster": {"prometheusOperator": False}}):
        objects = render_operand(node_status_exporter.render, document)
        assert "ServiceMonitor" not in [o["kind"] for o in objects]
        assert find(objects, "Service")


def test_daemonset_matches_upstream() -> None:
    ds = find(render_operand(node_status_exporter.render, NVIDIA), "DaemonSet")
    pod = pod_of(ds)
    assert ds["spec"]["selector"]["matchLabels"] == {"app": "nvidia-node-status-exporter"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.node-status-exporter": "true"}
    assert pod["serviceAccountName"] == "nvidia-node-status-exporter"
    assert "runtimeClassName" not in pod
    assert pod["priorityClassName"] == "system-node-critical"
    assert init_names(ds) == []
    exporter = _exporter([ds])
    assert exporter["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert exporter["command"] == ["nvidia-validator"]
    assert env_of(exporter) == {
        "COMPONENT": "metrics",
        "METRICS_PORT": "8000",
        "NVIDIA_VISIBLE_DEVICES": "void",
        "NODE_NAME": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        "OPERATOR_NAMESPACE": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
    }
    assert exporter["ports"] == [{"name": "node-status", "containerPort": 8000}]
    assert exporter["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert volume_paths(ds) == {"run-nvidia": "/run/nvidia", "host-root": "/"}
    assert mounts(exporter) == {"run-nvidia": "/run/nvidia", "host-root": "/host"}


def test_agent_runs_node_status_exporter() -> None:
    objects = render_operand(node_status_exporter.render, with_agents(ENABLED))
    agent, nvidia = _exporter(objects), _exporter(render_operand(node_status_exporter.render, NVIDIA))
    assert agent["command"] == ["gpu-operator-agent", "node-status-exporter"]
    assert agent["image"] == AGENTS_IMAGE
    assert env_of(agent) == env_of(nvidia)
    assert agent["volumeMounts"] == nvidia["volumeMounts"]
    # the driver check runs the host's nvidia-smi on host device nodes: privileged root, as NVIDIA's
    assert agent["securityContext"] == nvidia["securityContext"] == {"privileged": True, "runAsUser": 0}
    assert_valid(objects)


def test_host_root_and_user_settings() -> None:
    document = {
        "agents": {"implementation": "nvidia"},
        "operator": {
            "hostPaths": {"rootFS": "/host-fs"},
            "nodeStatusExporter": {
                "enabled": True, "env": [{"name": "METRICS_PORT", "value": "8000"}, {"name": "DEBUG", "value": "1"}],
                "resources": {"requests": {"cpu": "10m"}}, "repository": "registry.example.com/nvidia",
                "image": "gpu-operator", "version": "v26.7.0-custom",
            },
        },
    }
    objects = render_operand(node_status_exporter.render, document)
    ds = find(objects, "DaemonSet")
    exporter = _exporter(objects)
    assert volume_paths(ds)["host-root"] == "/host-fs"
    assert env_of(exporter)["HOST_ROOT"] == "/host-fs"
    assert env_of(exporter)["DEBUG"] == "1"
    assert exporter["resources"] == {"requests": {"cpu": "10m"}}
    assert exporter["image"] == "registry.example.com/nvidia/gpu-operator:v26.7.0-custom"
    assert_valid(objects)


def test_exporter_is_told_its_namespace() -> None:
    """NVIDIA's assets/state-node-status-exporter/0700_daemonset.yaml sets `OPERATOR_NAMESPACE` from the pod's
    namespace: without it NVIDIA's validator lists driver DaemonSets cluster-wide, is Forbidden by its Role, and
    reports `gpu_operator_node_driver_ready` as 0 forever. Both implementations get the same env."""
    image = {"repository": "registry.example.com/gpu/agents", "tag": "0.1.0"}
    for agents in ({"implementation": "nvidia"}, {"implementation": "agents", "image": image}):
        objects = render_operand(node_status_exporter.render, {**ENABLED, "agents": agents})
        namespace = env_of(_exporter(objects))["OPERATOR_NAMESPACE"]
        assert namespace == {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
        assert_valid(objects)
