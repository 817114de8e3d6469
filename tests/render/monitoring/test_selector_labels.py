"""Every monitor and rule carries the label a stock kube-prometheus-stack selects by; `check` names the ones it won't.

kube-prometheus-stack 88.5.3 (prometheus-community/helm-charts, charts/kube-prometheus-stack/values.yaml):
`prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues`, `podMonitorSelectorNilUsesHelmValues` and
`ruleSelectorNilUsesHelmValues` are true with empty selectors, which templates/prometheus/prometheus.yaml renders as
`matchLabels: {release: <Release.Name>}`: a monitor or rule without that label is never loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.policy import PolicyContext, check
from gpu_operator.render import render_operands
from gpu_operator.render.stack import stack_objects
from tests.support.agents import with_agents

MONITORING_KINDS = ("ServiceMonitor", "PodMonitor", "PrometheusRule")
#: Every monitor we render: the exporter's, the node status exporter's, the controller's, DOCA telemetry's.
EVERYTHING: dict[str, Any] = with_agents({
    "aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"},
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}],
    "cluster": {"prometheusOperator": True},
    "nfd": {"enabled": False},
    "network": {"docaTelemetry": True},
    "operator": {"nodeStatusExporter": {"enabled": True}, "dcgmExporter": {"serviceMonitor": {"enabled": True}}},
})


def _monitoring_objects(document: dict[str, Any]) -> list[dict[str, Any]]:
    config = parse_config(document)
    return [obj for obj in stack_objects(config, render_operands(config)) if obj["kind"] in MONITORING_KINDS]


def _names(objects: list[dict[str, Any]]) -> set[str]:
    return {f"{obj['kind']}/{obj['metadata']['name']}" for obj in objects}


def test_every_monitor_and_rule_carries_the_release_label_by_default() -> None:
    objects = _monitoring_objects(EVERYTHING)
    assert _names(objects) >= {"ServiceMonitor/nvidia-dcgm-exporter", "ServiceMonitor/nvidia-node-status-exporter",
                               "PodMonitor/doca-telemetry-service", "PrometheusRule/gpu-operator-alerts"}
    for obj in objects:
        assert obj["metadata"]["labels"].get("release") == "kube-prometheus", obj["metadata"]["name"]


def test_the_release_is_a_setting_and_nvidias_additional_labels_still_win() -> None:
    document = {**EVERYTHING, "monitoring": {"prometheusRelease": "prom", "monitorLabels": {"team": "gpu"}}}
    for obj in _monitoring_objects(document):
        assert obj["metadata"]["labels"]["release"] == "prom"
        if obj["kind"] != "PrometheusRule":
            assert obj["metadata"]["labels"]["team"] == "gpu"
    exporter = {**document, "operator": {**EVERYTHING["operator"], "dcgmExporter": {"serviceMonitor": {
        "enabled": True, "additionalLabels": {"release": "other"}}}}}
    [monitor] = [obj for obj in _monitoring_objects(exporter) if obj["metadata"]["name"] == "nvidia-dcgm-exporter"]
    assert monitor["metadata"]["labels"]["release"] == "other"


def test_the_node_status_monitor_gets_the_labels_the_policy_asks_for() -> None:
    """Setting `ruleLabels` (and no release) used to leave NVIDIA's node-status ServiceMonitor unlabelled, a
    mandatory `monitors-carry-prometheus-selector` violation of our own render."""
    document = {**EVERYTHING, "monitoring": {"prometheusRelease": None, "ruleLabels": {"prometheus": "k8s"}}}
    config = parse_config(document)
    objects = stack_objects(config, render_operands(config))
    [node_status] = [obj for obj in objects if obj["kind"] == "ServiceMonitor"
                     and obj["metadata"]["name"] == "nvidia-node-status-exporter"]
    assert node_status["metadata"]["labels"]["prometheus"] == "k8s"
    findings = check(objects, PolicyContext.from_config(config))
    assert not [f for f in findings if f.policy.name == "monitors-carry-prometheus-selector"]


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "stack.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(("overrides", "unselected"), [
    ({"operator": {"dcgmExporter": {"serviceMonitor": {"enabled": True, "additionalLabels": {"release": "other"}}}}},
     "ServiceMonitor gpu-operator/nvidia-dcgm-exporter"),
    ({"monitoring": {"ruleLabels": {"release": "prom"}}}, "PrometheusRule gpu-operator/gpu-operator-alerts"),
])
def test_check_names_a_monitor_the_stock_selector_will_not_select(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: dict[str, Any], unselected: str
) -> None:
    document = {"cluster": {"prometheusOperator": True}, **overrides}
    status = main(["check", "-f", str(_write(tmp_path, document))])
    out = capsys.readouterr().out
    assert status == 3, out
    assert f"monitors-carry-prometheus-selector: {unselected}" in out
    assert "{'release': 'kube-prometheus'}" in out
    assert "monitoring.prometheusRelease" in out


def test_check_is_quiet_on_the_default_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", "-f", str(_write(tmp_path, {"cluster": {"prometheusOperator": True}}))])
    assert "monitors-carry-prometheus-selector" not in capsys.readouterr().out
    assert status in (0, 3)


def test_a_bad_release_or_runbook_template_names_the_field() -> None:
    from gpu_operator.config import ConfigError

    with pytest.raises(ConfigError, match=r"monitoring\.prometheusRelease.*Helm release name"):
        parse_config({"monitoring": {"prometheusRelease": "Kube Prometheus"}})
    with pytest.raises(ConfigError, match=r"monitoring\.runbookUrl.*\{alert\}"):
        parse_config({"monitoring": {"runbookUrl": "https://wiki.example.com/gpu"}})
