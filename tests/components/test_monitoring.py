"""GpuMonitoring under Pulumi mocks: the PrometheusRule on the cluster's provider, after the operator."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import GpuMonitoring, GpuOperator
from gpu_operator.config import ConfigError
from tests.support.pulumi_mocks import Recording, run_program

TOKEN = "gpu-operator:index:GpuMonitoring"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
DOCUMENT: dict[str, Any] = {
    "cluster": {"prometheusOperator": True},
    "monitoring": {"ruleLabels": {"release": "kube-prometheus"}},
}


def _program(document: dict[str, Any]):
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        operator = GpuOperator("gpu", {"provider": provider, "config": document})
        GpuMonitoring("mon", {"provider": provider, "config": document}, pulumi.ResourceOptions(depends_on=[operator]))
    return program


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_program(_program(DOCUMENT))


def test_the_rule_is_a_child_on_the_clusters_provider(recording: Recording) -> None:
    [component] = recording.of_type(TOKEN)
    [rule] = recording.of_type(RULE)
    assert rule.parent == component.urn
    assert rule.provider.startswith(recording.of_type("pulumi:providers:kubernetes")[0].urn)
    assert rule.inputs["metadata"]["labels"]["release"] == "kube-prometheus"
    assert rule.inputs["metadata"]["namespace"] == "gpu-operator"


def test_the_rule_waits_for_the_operators_objects(recording: Recording) -> None:
    [rule] = recording.of_type(RULE)
    operator_children = {r.urn for r in recording.registrations if r.name.startswith("gpu-") and r.custom}
    assert operator_children & set(rule.dependencies)


def test_no_prometheus_operator_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError) as raised:
        run_program(_program({}))
    assert "cluster.prometheusOperator" in str(raised.value)


def test_asking_for_rules_without_the_prometheus_operator_names_both_fields() -> None:
    with pytest.raises(ConfigError) as raised:
        run_program(_program({"monitoring": {"prometheusRules": True}}))
    assert "monitoring.prometheusRules" in str(raised.value)
    assert "cluster.prometheusOperator" in str(raised.value)


def test_the_dashboard_configmap_is_a_child_labelled_for_the_grafana_sidecar(recording: Recording) -> None:
    [component] = recording.of_type(TOKEN)
    [configmap] = [r for r in recording.of_type("kubernetes:core/v1:ConfigMap") if r.parent == component.urn]
    assert configmap.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert '"uid": "gpu-operator-fleet"' in configmap.inputs["data"]["gpu-operator-fleet.json"]
