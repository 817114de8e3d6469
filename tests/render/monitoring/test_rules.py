"""The GPU PrometheusRule: strict CRD validation, promtool's check and unit tests, metrics the exporters emit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES
from gpu_operator.config.dcgm_metrics import parse_metrics_csv
from gpu_operator.render.monitoring.exporter_fields import NODE_STATUS_METRICS, PROMETHEUS_METRICS
from gpu_operator.render.monitoring.promql import metric_names
from gpu_operator.render.monitoring.xid import XID_APPLICATION, XID_HARDWARE, XID_REBOOT
from tests.render.monitoring.promtool_cases import (
    AKS,
    PROMTOOL,
    expected,
    needs_promtool,
    promtool_test,
    render_rule,
    rules_of,
    series,
    write_rules,
)
from tests.support.agents import with_agents
from tests.support.reference import reference_file
from tests.support.schemas import validate_objects

HERE = Path(__file__).parent
#: An 8-GPU and a 1-GPU pool, so GpuLost (which compares each node with its pool) is rendered.
POOLS = {"aks": AKS, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"},
                               {"name": "a100", "vmSize": "Standard_NC24ads_A100_v4"}]}
WITH_NODE_STATUS = {**POOLS, "operator": {"nodeStatusExporter": {"enabled": True}}}


def _rule(document: dict[str, Any] | None = None) -> dict[str, Any]:
    return render_rule(WITH_NODE_STATUS if document is None else document)


def test_the_rule_validates_strictly_against_the_crd() -> None:
    assert validate_objects([_rule(), _rule({})]) == []


def test_the_default_exporters_get_every_alert_their_metrics_allow() -> None:
    # A misspelled metric would drop its alert silently: the full list is pinned here.
    alerts = [item["alert"] for item in rules_of(_rule()) if "alert" in item]
    assert alerts == [
        "GpuXidHardwareError", "GpuXidApplicationError", "GpuTemperatureHigh", "GpuMemoryTemperatureHigh",
        "GpuFramebufferFull", "GpuRowRemapFailed", "GpuPcieReplaysGrowing", "GpuMetricsExporterDown", "GpuLost",
        "GpuNodeDriverNotReady", "GpuNodeToolkitNotReady", "GpuNodePluginNotReady", "GpuNodeCudaNotReady",
        "GpuDevicePluginNoDevices",
    ]
    records = [item["record"] for item in rules_of(_rule()) if "record" in item]
    assert records == [
        "hostname:gpu_utilization:avg", "namespace:gpu_utilization:avg", "pod:gpu_utilization:avg",
        "hostname:gpu_allocated_idle:count",
    ]


def test_every_alert_says_what_to_check_next() -> None:
    for item in rules_of(_rule()):
        if "alert" in item:
            assert set(item["annotations"]) == {"summary", "description"}, item["alert"]
            assert " Next: " in item["annotations"]["description"], item["alert"]
            assert item["labels"]["severity"] in {"critical", "warning", "info"}


def test_alerts_link_their_runbook_with_the_conventional_annotation() -> None:
    """kube-prometheus (and Alertmanager / Grafana templates after it) read `summary`, `description` and
    `runbook_url` (prometheus-community/helm-charts kube-prometheus-stack 88.5.3, templates/prometheus/rules-1.14:
    every rule's annotations); a `runbook` annotation is read by nothing."""
    rule = _rule({**WITH_NODE_STATUS, "monitoring": {"runbookUrl": "https://wiki.example.com/gpu/{alert}"}})
    alerts = [item for item in rules_of(rule) if "alert" in item]
    assert alerts
    for item in alerts:
        assert set(item["annotations"]) == {"summary", "description", "runbook_url"}, item["alert"]
        assert item["annotations"]["runbook_url"] == f"https://wiki.example.com/gpu/{item['alert']}"


def test_the_rule_carries_the_release_label_a_stock_kube_prometheus_stack_selects() -> None:
    """kube-prometheus-stack 88.5.3 values.yaml: `ruleSelectorNilUsesHelmValues: true` and an empty `ruleSelector`,
    which templates/prometheus/prometheus.yaml turns into `ruleSelector.matchLabels.release: <Release.Name>`."""
    assert _rule()["metadata"]["labels"]["release"] == "kube-prometheus"
    rule = _rule({"monitoring": {"prometheusRelease": "monitoring"}})
    assert rule["metadata"]["labels"]["release"] == "monitoring"
    assert "release" not in _rule({"monitoring": {"prometheusRelease": None}})["metadata"]["labels"]


@needs_promtool
def test_promtool_checks_the_rendered_rules(tmp_path: Path) -> None:
    result = subprocess.run([PROMTOOL, "check", "rules", str(write_rules(_rule(), tmp_path / "rules.yaml"))],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_fire_and_do_not_fire_each_alert(tmp_path: Path) -> None:
    write_rules(_rule(), tmp_path / "rules.yaml")
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
    for item in rules_of(rule):
        names = set(metric_names(item["expr"]))
        assert names, item
        assert names <= emitted, (item.get("alert") or item.get("record"), names - emitted)


def test_alerts_on_fields_the_csv_does_not_collect_are_left_out_until_it_does() -> None:
    names = {item.get("alert") for item in rules_of(_rule())}
    assert "GpuEccDoubleBitErrors" not in names and "GpuRowRemapPending" not in names
    csv = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, double-bit\nDCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
    document = {**POOLS, "configs": {"dcgmExporter": csv},
                "operator": {"dcgmExporter": {"config": {"name": "metrics"}}}}
    names = {item.get("alert") for item in rules_of(_rule(document))}
    assert {"GpuEccDoubleBitErrors", "GpuTemperatureHigh", "GpuLost"} <= names
    assert "GpuXidHardwareError" not in names


def test_node_status_alerts_need_the_node_status_exporter() -> None:
    assert not any("gpu_operator_node" in item["expr"] for item in rules_of(_rule({})))
    assert any("gpu_operator_node_driver_ready" in item["expr"] for item in rules_of(_rule()))


def test_thresholds_come_from_the_config() -> None:
    document = {"monitoring": {"thresholds": {"gpuTemperatureCelsius": 78, "temperatureFor": "2m"},
                               "ruleLabels": {"release": "kube-prometheus"}}}
    rule = _rule(document)
    (alert,) = [item for item in rules_of(rule) if item.get("alert") == "GpuTemperatureHigh"]
    assert alert["expr"].endswith("> 78") and alert["for"] == "2m"
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus"


# -- our node status exporter: DRA-aware plugin alerts, upgrade, MIG and RDMA states ------------------------------

WITH_AGENT_NODE_STATUS = with_agents(WITH_NODE_STATUS)


def _agent_alert_tests(rule: dict[str, Any]) -> dict[str, Any]:
    dra, gpu = {"instance": "dra1:8000", "node": "dra1"}, {"instance": "n1:8000", "node": "n1"}
    state = lambda node, value: {"instance": f"{node}:8000", "node": node, "state": value}  # noqa: E731
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {   # a DRA node advertises no nvidia.com/gpu by design; a device-plugin node doing so is broken
                "interval": "1m",
                "input_series": [
                    series("gpu_operator_node_plugin_ready", dra, "0x30"),
                    series("gpu_operator_node_device_plugin_devices_total", dra, "0x30"),
                    series("gpu_operator_node_device_plugin_enabled", dra, "0x30"),
                    series("gpu_operator_node_plugin_ready", gpu, "0x30"),
                    series("gpu_operator_node_device_plugin_devices_total", gpu, "0x30"),
                    series("gpu_operator_node_device_plugin_enabled", gpu, "1x30"),
                ],
                "alert_rule_test": [
                    {"eval_time": "15m", "alertname": "GpuNodePluginNotReady",
                     "exp_alerts": [expected(rule, "GpuNodePluginNotReady", gpu)]},
                    {"eval_time": "15m", "alertname": "GpuDevicePluginNoDevices",
                     "exp_alerts": [expected(rule, "GpuDevicePluginNoDevices", gpu)]},
                ],
            },
            {   # upgrade states: stuck after 2h in one state, failed at once; done never alerts
                "interval": "1m",
                "input_series": [
                    series("gpu_operator_node_driver_upgrade_state", state("n1", "drain-required"), "1x200"),
                    series("gpu_operator_node_driver_upgrade_state", state("n2", "upgrade-done"), "1x200"),
                    series("gpu_operator_node_driver_upgrade_state", state("n3", "upgrade-failed"), "1x200"),
                ],
                "alert_rule_test": [
                    {"eval_time": "1h", "alertname": "GpuDriverUpgradeStuck", "exp_alerts": []},
                    {"eval_time": "150m", "alertname": "GpuDriverUpgradeStuck",
                     "exp_alerts": [expected(rule, "GpuDriverUpgradeStuck", state("n1", "drain-required"))]},
                    {"eval_time": "20m", "alertname": "GpuDriverUpgradeFailed",
                     "exp_alerts": [expected(rule, "GpuDriverUpgradeFailed", state("n3", "upgrade-failed"))]},
                ],
            },
            {   # MIG: failed fires in a minute; pending only after 30 minutes
                "interval": "1m",
                "input_series": [
                    series("gpu_operator_node_mig_config_state", state("m1", "failed"), "1x60"),
                    series("gpu_operator_node_mig_config_state", state("m2", "pending"), "1x60"),
                    series("gpu_operator_node_mig_config_state", state("m3", "success"), "1x60"),
                ],
                "alert_rule_test": [
                    {"eval_time": "3m", "alertname": "GpuMigReconfigurationFailed",
                     "exp_alerts": [expected(rule, "GpuMigReconfigurationFailed", state("m1", "failed"))]},
                    {"eval_time": "20m", "alertname": "GpuMigReconfigurationPending", "exp_alerts": []},
                    {"eval_time": "40m", "alertname": "GpuMigReconfigurationPending",
                     "exp_alerts": [expected(rule, "GpuMigReconfigurationPending", state("m2", "pending"))]},
                ],
            },
            {   # RDMA: an IB node with no rdma/* capacity; an IB node with devices and a non-IB node are fine
                "interval": "1m",
                "input_series": [
                    series("gpu_operator_node_infiniband_present", {"instance": "ib1:8000", "node": "ib1"}, "1x30"),
                    series("gpu_operator_node_rdma_devices_total", {"instance": "ib1:8000", "node": "ib1"}, "0x30"),
                    series("gpu_operator_node_infiniband_present", {"instance": "ib2:8000", "node": "ib2"}, "1x30"),
                    series("gpu_operator_node_rdma_devices_total", {"instance": "ib2:8000", "node": "ib2"}, "8x30"),
                    series("gpu_operator_node_infiniband_present", {"instance": "t4:8000", "node": "t4"}, "0x30"),
                    series("gpu_operator_node_rdma_devices_total", {"instance": "t4:8000", "node": "t4"}, "0x30"),
                ],
                "alert_rule_test": [
                    {"eval_time": "10m", "alertname": "RdmaResourcesMissing", "exp_alerts": []},
                    {"eval_time": "20m", "alertname": "RdmaResourcesMissing",
                     "exp_alerts": [expected(rule, "RdmaResourcesMissing", {"instance": "ib1:8000", "node": "ib1"})]},
                ],
            },
        ],
    }


def test_our_node_status_exporter_adds_state_alerts_and_quiets_dra_nodes() -> None:
    rule = _rule(WITH_AGENT_NODE_STATUS)
    alerts = [item["alert"] for item in rules_of(rule) if "alert" in item]
    assert len(alerts) == len(set(alerts))
    assert {"GpuDriverUpgradeFailed", "GpuDriverUpgradeStuck", "GpuMigReconfigurationFailed",
            "GpuMigReconfigurationPending", "RdmaResourcesMissing"} <= set(alerts)
    plugin = next(item for item in rules_of(rule) if item.get("alert") == "GpuNodePluginNotReady")
    assert "gpu_operator_node_device_plugin_enabled" in plugin["expr"]
    assert validate_objects([rule]) == []


@needs_promtool
def test_promtool_unit_tests_of_the_state_alerts(tmp_path: Path) -> None:
    rule = _rule(WITH_AGENT_NODE_STATUS)
    write_rules(rule, tmp_path / "rules.yaml")
    (tmp_path / "agent_alerts_test.yaml").write_text(yaml.safe_dump(_agent_alert_tests(rule), sort_keys=False))
    check = subprocess.run([PROMTOOL, "check", "rules", "rules.yaml"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run([PROMTOOL, "test", "rules", "agent_alerts_test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


THROTTLE_CSV = ("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                "DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (in ns).\n"
                "DCGM_FI_DEV_THERMAL_VIOLATION, counter, Throttling duration due to thermal constraints (in ns).\n")
WITH_THROTTLE_FIELDS = {"agents": {"implementation": "nvidia"},
                        "operator": {"dcgmExporter": {"config": {"name": "gpu-metrics"}}},
                        "configs": {"dcgmExporter": THROTTLE_CSV}}


def test_throttling_alerts_only_when_the_csv_collects_the_violation_counters() -> None:
    alerts = {item["alert"] for item in rules_of(_rule(WITH_THROTTLE_FIELDS)) if "alert" in item}
    assert {"GpuPowerThrottling", "GpuThermalThrottling"} <= alerts
    assert not {"GpuPowerThrottling", "GpuThermalThrottling"} & {
        item["alert"] for item in rules_of(_rule()) if "alert" in item}


@needs_promtool
def test_promtool_unit_tests_of_the_throttling_alerts(tmp_path: Path) -> None:
    rule = _rule(WITH_THROTTLE_FIELDS)
    write_rules(rule, tmp_path / "rules.yaml")
    hot = {"hostname": "n1", "gpu": "0", "UUID": "GPU-0"}
    cool = {"hostname": "n1", "gpu": "1", "UUID": "GPU-1"}

    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                # 30 s of every minute power-throttled (50%), 1 s a minute (under 2%) on the other GPU
                series("DCGM_FI_DEV_POWER_VIOLATION", hot, "0+30000000000x40"),
                series("DCGM_FI_DEV_POWER_VIOLATION", cool, "0+1000000000x40"),
                series("DCGM_FI_DEV_THERMAL_VIOLATION", hot, "0x40"),
            ],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "GpuPowerThrottling", "exp_alerts": []},
                {"eval_time": "30m", "alertname": "GpuPowerThrottling",
                 "exp_alerts": [expected(rule, "GpuPowerThrottling", hot)]},
                {"eval_time": "30m", "alertname": "GpuThermalThrottling", "exp_alerts": []},
            ],
        }],
    }
    (tmp_path / "throttle_test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run([PROMTOOL, "test", "rules", "throttle_test.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# -- XIDs needing a reset or a reboot; the framebuffer with the driver's reservation -------------------------------


def test_the_hardware_xids_cover_every_reset_or_reboot_xid() -> None:
    """NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors, "immediate resolution" RESET_GPU / RESTART_BM /
    RESTART_VM, and XID 154 "GPU recovery action changed"); dcgm-exporter's internal/pkg/collector/xid_errors.go
    `xidErrCodeToText` names the codes 119 "GSP RPC Timeout", 120 "GSP Error", 154 "GPU Recovery Action Changed".
    The reboot XIDs are RESTART_BM (79), RESTART_VM (151) and 168 (errors in the write-protected region, "boot
    re-attempted"); 92 (high single-bit ECC rate) is IGNORE in the catalog and has no XID alert."""
    assert {48, 62, 64, 95, 119, 120, 154} <= set(XID_HARDWARE)
    assert set(XID_REBOOT) <= set(XID_HARDWARE)
    assert XID_REBOOT == (79, 151, 168)
    assert 92 not in XID_HARDWARE + XID_APPLICATION
    assert not set(XID_HARDWARE) & set(XID_APPLICATION)


@needs_promtool
def test_promtool_the_framebuffer_ratio_counts_the_reserved_memory(tmp_path: Path) -> None:
    """dcgm-exporter etc/default-counters.csv collects DCGM_FI_DEV_FB_FREE, _USED and _RESERVED (MiB): the GPU's
    memory is their sum, so 3800 MiB free of 80000 is 95.25% taken although used / (used + free) reads 94.85%."""
    rule = _rule()
    full = {"hostname": "n1", "gpu": "0", "UUID": "GPU-0"}
    roomy = {"hostname": "n1", "gpu": "1", "UUID": "GPU-1"}
    inputs = [
        series("DCGM_FI_DEV_FB_USED", full, "70000x30"), series("DCGM_FI_DEV_FB_FREE", full, "3800x30"),
        series("DCGM_FI_DEV_FB_RESERVED", full, "6200x30"),
        series("DCGM_FI_DEV_FB_USED", roomy, "40000x30"), series("DCGM_FI_DEV_FB_FREE", roomy, "39500x30"),
        series("DCGM_FI_DEV_FB_RESERVED", roomy, "500x30"),
    ]
    alert = expected(rule, "GpuFramebufferFull", full)
    alert["exp_annotations"] = {key: value.replace("{{ $value | humanizePercentage }}", "95.25%")
                                for key, value in alert["exp_annotations"].items()}
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [{"eval_time": "20m", "alertname": "GpuFramebufferFull", "exp_alerts": [alert]}],
    }])


def test_without_the_reserved_field_the_framebuffer_alert_reads_what_the_csv_collects() -> None:
    csv = ("DCGM_FI_DEV_FB_USED, gauge, used\nDCGM_FI_DEV_FB_FREE, gauge, free\n"
           "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n")
    document = {"configs": {"dcgmExporter": csv}, "operator": {"dcgmExporter": {"config": {"name": "metrics"}}}}
    [alert] = [item for item in rules_of(_rule(document)) if item.get("alert") == "GpuFramebufferFull"]
    assert "DCGM_FI_DEV_FB_RESERVED" not in alert["expr"]
    [alert] = [item for item in rules_of(_rule()) if item.get("alert") == "GpuFramebufferFull"]
    assert "DCGM_FI_DEV_FB_RESERVED" in alert["expr"]
