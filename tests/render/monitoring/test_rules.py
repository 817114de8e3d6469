"""The GPU PrometheusRule: strict CRD validation, promtool's check and unit tests, metrics the exporters emit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES
from gpu_operator.config import parse_config
from gpu_operator.config.dcgm_metrics import parse_metrics_csv
from gpu_operator.render.monitoring import render_prometheus_rule
from gpu_operator.render.monitoring.exporter_fields import NODE_STATUS_METRICS, PROMETHEUS_METRICS
from gpu_operator.render.monitoring.promql import metric_names
from tests.support.reference import reference_file
from tests.support.schemas import validate_objects

HERE = Path(__file__).parent
WITH_NODE_STATUS = {"operator": {"nodeStatusExporter": {"enabled": True}}}
PROMTOOL = shutil.which("promtool")
# promtool is installed by the project's setup (tools/install-test-tools.sh); its absence is a setup failure.
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: run tools/install-test-tools.sh")


def _rule(document: dict[str, Any] | None = None) -> dict[str, Any]:
    return render_prometheus_rule(parse_config(WITH_NODE_STATUS if document is None else document))


def _rules(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for group in rule["spec"]["groups"] for item in group["rules"]]


def _write_rules(rule: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False), encoding="utf-8")
    return path


def test_the_rule_validates_strictly_against_the_crd() -> None:
    assert validate_objects([_rule(), _rule({})]) == []


def test_the_default_exporters_get_every_alert_their_metrics_allow() -> None:
    # A misspelled metric would drop its alert silently: the full list is pinned here.
    alerts = [item["alert"] for item in _rules(_rule()) if "alert" in item]
    assert alerts == [
        "GpuXidHardwareError", "GpuXidApplicationError", "GpuTemperatureHigh", "GpuMemoryTemperatureHigh",
        "GpuFramebufferFull", "GpuRowRemapFailed", "GpuPcieReplaysGrowing", "GpuMetricsExporterDown", "GpuLost",
        "GpuNodeDriverNotReady", "GpuNodeToolkitNotReady", "GpuNodePluginNotReady", "GpuNodeCudaNotReady",
        "GpuDevicePluginNoDevices",
    ]
    records = [item["record"] for item in _rules(_rule()) if "record" in item]
    assert records == [
        "hostname:gpu_utilization:avg", "namespace:gpu_utilization:avg", "pod:gpu_utilization:avg",
        "hostname:gpu_allocated_idle:count",
    ]


def test_every_alert_says_what_to_check_next() -> None:
    for item in _rules(_rule()):
        if "alert" in item:
            assert set(item["annotations"]) == {"summary", "description", "runbook"}, item["alert"]
            assert item["labels"]["severity"] in {"critical", "warning", "info"}


@needs_promtool
def test_promtool_checks_the_rendered_rules(tmp_path: Path) -> None:
    result = subprocess.run([PROMTOOL, "check", "rules", str(_write_rules(_rule(), tmp_path / "rules.yaml"))],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_fire_and_do_not_fire_each_alert(tmp_path: Path) -> None:
    _write_rules(_rule(), tmp_path / "rules.yaml")
    shutil.copy(HERE / "alerts_test.yaml", tmp_path / "alerts_test.yaml")
    result = subprocess.run([PROMTOOL, "test", "rules", "alerts_test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _nvidia_default_fields() -> set[str]:
    text = reference_file("dcgm-exporter/default-counters.csv").read_text(encoding="utf-8")
    return {field.field for field in parse_metrics_csv(text) if field.kind != "label"}


@pytest.mark.parametrize("implementation", ["agents", "nvidia"])
def test_every_metric_a_rule_names_is_one_the_exporter_emits(implementation: str) -> None:
    emitted = (set(FIELD_SOURCES) if implementation == "agents" else set()) | _nvidia_default_fields()
    if implementation == "agents":
        emitted &= _nvidia_default_fields()  # the default CSV selects among the fields our exporter can read
    emitted |= NODE_STATUS_METRICS | PROMETHEUS_METRICS
    choice = {} if implementation == "agents" else {"agents": {"implementation": implementation}}
    rule = _rule({**WITH_NODE_STATUS, **choice})
    for item in _rules(rule):
        names = set(metric_names(item["expr"]))
        assert names, item
        assert names <= emitted, (item.get("alert") or item.get("record"), names - emitted)


def test_alerts_on_fields_the_csv_does_not_collect_are_left_out_until_it_does() -> None:
    names = {item.get("alert") for item in _rules(_rule())}
    assert "GpuEccDoubleBitErrors" not in names and "GpuRowRemapPending" not in names
    csv = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, double-bit\nDCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
    document = {"configs": {"dcgmExporter": csv}, "operator": {"dcgmExporter": {"config": {"name": "metrics"}}}}
    names = {item.get("alert") for item in _rules(_rule(document))}
    assert {"GpuEccDoubleBitErrors", "GpuTemperatureHigh", "GpuLost"} <= names
    assert "GpuXidHardwareError" not in names


def test_node_status_alerts_need_the_node_status_exporter() -> None:
    assert not any("gpu_operator_node" in item["expr"] for item in _rules(_rule({})))
    assert any("gpu_operator_node_driver_ready" in item["expr"] for item in _rules(_rule()))


def test_thresholds_come_from_the_config() -> None:
    document = {"monitoring": {"thresholds": {"gpuTemperatureCelsius": 78, "temperatureFor": "2m"},
                               "ruleLabels": {"release": "kube-prometheus"}}}
    rule = _rule(document)
    (alert,) = [item for item in _rules(rule) if item.get("alert") == "GpuTemperatureHigh"]
    assert alert["expr"].endswith("> 78") and alert["for"] == "2m"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus"
