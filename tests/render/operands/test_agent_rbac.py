"""Each agent's RBAC follows whose program runs: NVIDIA's rules for NVIDIA's program, exactly the calls of ours.

NVIDIA's rules are those of gpu-operator v26.7.0's assets (`assets/gpu-feature-discovery/0200_role.yaml` and
`0210_clusterrole.yaml`, `assets/state-operator-validation/0200_role.yaml` and `0210_clusterrole.yaml`,
`assets/state-node-status-exporter/0200_role.yaml` and `0300_clusterrole.yaml`,
`assets/state-dcgm-exporter/0200_role.yaml` and `0210_clusterrole.yaml`), less OpenShift's SCC rule and the
validator's ClusterPolicy finalizer rule. Ours are what the agents call (gpu_operator/agents/feature_discovery,
validator, node_status_exporter, metrics_exporter); tests/e2e/test_fleet.py runs each agent with a token bound
to these rules and fails on a refused request and on a granted rule no request used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpu_operator.render.operands import (
    dcgm_exporter,
    gpu_feature_discovery,
    node_status_exporter,
    operator_validator,
)
from tests.render.operands.helpers import find, render_operand
from tests.support.agents import with_agents

Object = dict[str, Any]


def _rule(group: str, resource: str, *verbs: str) -> Object:
    return {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}


def _rules(objects: list[Object]) -> dict[str, list[Object]]:
    """Kind -> rules of each Role and ClusterRole (a kind that is not rendered is absent)."""
    return {o["kind"]: o["rules"] for o in objects if o["kind"] in ("Role", "ClusterRole")}


def _bound(objects: list[Object]) -> None:
    """Every rendered role has its binding, and no binding points at a role that is not rendered."""
    roles = {(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in ("Role", "ClusterRole")}
    refs = {(o["roleRef"]["kind"], o["roleRef"]["name"]) for o in objects
            if o["kind"] in ("RoleBinding", "ClusterRoleBinding")}
    assert roles == refs


NODES_READ = _rule("", "nodes", "get", "list", "watch")
GPU_DEVICES = _rule("gpu.pulumi-gpu-operator.io", "gpudevices", "get", "list", "create", "update", "delete")
ON_POD_LABELS = {"operator": {"dcgmExporter": {"enablePodLabels": True}}}

CASES: list[tuple[str, Callable[..., list[Object]], dict, dict[str, list[Object]]]] = [
    ("gfd nvidia", gpu_feature_discovery.render, with_agents(overrides={"gfd": "nvidia"}), {
        "Role": [_rule("nfd.k8s-sigs.io", "nodefeatures", "get", "list", "watch", "create", "update"),
                 _rule("", "pods", "get")],
        "ClusterRole": [NODES_READ],
    }),
    ("gfd agent", gpu_feature_discovery.render, with_agents(), {
        "Role": [_rule("nfd.k8s-sigs.io", "nodefeatures", "get", "create", "update"), _rule("", "pods", "get")],
        "ClusterRole": [_rule("", "nodes", "get"), GPU_DEVICES],
    }),
    ("gfd agent, no GpuDevices", gpu_feature_discovery.render, with_agents(gpuDevices=False), {
        "Role": [_rule("nfd.k8s-sigs.io", "nodefeatures", "get", "create", "update"), _rule("", "pods", "get")],
    }),
    ("validator nvidia", operator_validator.render, {}, {
        "Role": [_rule("", "pods", "create", "get", "list", "watch", "update", "patch", "delete"),
                 _rule("apps", "daemonsets", "get", "list", "watch")],
        "ClusterRole": [NODES_READ],
    }),
    ("validator agent", operator_validator.render, with_agents(), {
        "Role": [_rule("", "pods", "create", "get", "list", "watch", "delete"), _rule("apps", "daemonsets", "get")],
        "ClusterRole": [_rule("", "nodes", "get")],
    }),
    ("node status nvidia", node_status_exporter.render, {"operator": {"nodeStatusExporter": {"enabled": True}}}, {
        "Role": [_rule("", "pods", "get", "list"), _rule("apps", "daemonsets", "get", "list", "watch")],
        "ClusterRole": [NODES_READ],
    }),
    ("node status agent", node_status_exporter.render,
     with_agents({"operator": {"nodeStatusExporter": {"enabled": True}}}), {
        "ClusterRole": [_rule("", "nodes", "get")],
    }),
    ("dcgm exporter nvidia", dcgm_exporter.render, {}, {"Role": [_rule("", "configmaps", "get", "list")]}),
    ("dcgm exporter nvidia, pod labels", dcgm_exporter.render, ON_POD_LABELS, {
        "Role": [_rule("", "configmaps", "get", "list")],
        "ClusterRole": [_rule("", "pods", "get", "list", "watch")],
    }),
    ("dcgm exporter agent", dcgm_exporter.render, with_agents(), {}),
    ("dcgm exporter agent, pod labels", dcgm_exporter.render, with_agents(ON_POD_LABELS), {
        "ClusterRole": [_rule("", "pods", "list")],
    }),
]


@pytest.mark.parametrize(("render", "document", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_rules_follow_whose_program_runs(
    render: Callable[..., list[Object]], document: dict, expected: dict[str, list[Object]]
) -> None:
    objects = render_operand(render, document)
    assert _rules(objects) == expected
    _bound(objects)


def test_our_metrics_exporter_never_reads_its_config_map_through_the_api() -> None:
    """NVIDIA's dcgm-exporter reads the metrics ConfigMap when DCGM_EXPORTER_CONFIGMAP_DATA names it; ours accepts
    the setting and reads the mounted file (gpu_operator/agents/metrics_exporter/settings.py), so even then
    it gets no ConfigMap rule."""
    document = with_agents({"operator": {"dcgmExporter": {
        "env": [{"name": "DCGM_EXPORTER_CONFIGMAP_DATA", "value": "gpu-operator:metrics"}]}}})
    objects = render_operand(dcgm_exporter.render, document)
    assert not [o for o in objects if o["kind"] in ("Role", "RoleBinding")]
    assert find(objects, "ServiceAccount")["metadata"]["name"] == dcgm_exporter.NAME
