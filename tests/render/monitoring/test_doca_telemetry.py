"""The DOCA telemetry PodMonitor: only with DTS and the Prometheus Operator, strict against its CRD."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.render.monitoring import monitoring_objects
from tests.support.schemas import validate_objects

AKS = {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"}
H100 = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}


def _document(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {"aks": AKS, "pools": [H100], "cluster": {"prometheusOperator": True},
                                "network": {"docaTelemetry": True},
                                "monitoring": {"ruleLabels": {"release": "kube-prometheus"}}}
    for key, value in changes.items():
        document[key] = {**document.get(key, {}), **value}
    return document


def _pod_monitors(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [obj for obj in monitoring_objects(parse_config(document)) if obj["kind"] == "PodMonitor"]


def test_the_pod_monitor_scrapes_dts_in_the_network_namespace() -> None:
    [monitor] = _pod_monitors(_document())
    assert validate_objects([monitor]) == []
    assert monitor["metadata"]["namespace"] == "network-operator"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"  # ruleLabels when monitorLabels is empty
    assert monitor["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "doca-telemetry"}}
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["portNumber"] == 9189


def test_monitor_labels_win_over_rule_labels() -> None:
    [monitor] = _pod_monitors(_document(monitoring={"monitorLabels": {"prometheus": "gpu"}}))
    assert monitor["metadata"]["labels"] == {"app.kubernetes.io/part-of": "gpu-operator", "prometheus": "gpu",
                                             "release": "kube-prometheus"}
    [monitor] = _pod_monitors(_document(monitoring={"monitorLabels": {"prometheus": "gpu"},
                                                    "prometheusRelease": None}))
    assert monitor["metadata"]["labels"] == {"app.kubernetes.io/part-of": "gpu-operator", "prometheus": "gpu"}


@pytest.mark.parametrize("changes", [
    {"network": {"docaTelemetry": False}},
    {"cluster": {"prometheusOperator": False}},
    {"monitoring": {"enabled": False}},
    {"network": {"enabled": False, "docaTelemetry": False}},
])
def test_no_pod_monitor_without_dts_or_the_crds(changes: dict[str, Any]) -> None:
    assert _pod_monitors(_document(**changes)) == []
