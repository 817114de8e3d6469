"""No alert is left out silently: each one the PrometheusRule lacks is named in a render note with its remedy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import parse_config
from gpu_operator.config.dcgm_metrics import parse_metrics_csv
from gpu_operator.render.monitoring import monitoring_notes, render_prometheus_rule
from gpu_operator.render.monitoring.left_out import left_out_alerts
from gpu_operator.render.monitoring.rules import ALERTS
from tests.render.monitoring.promtool_cases import AKS, rules_of
from tests.support.agents import with_agents
from tests.support.reference import reference_file

RULES = {"cluster": {"prometheusOperator": True}}
POOLS = {"aks": AKS, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}]}
NODE_STATUS = {"operator": {"nodeStatusExporter": {"enabled": True}}}
ECC_AND_REMAP = {
    "operator": {"dcgmExporter": {"config": {"name": "gpu-metrics"}}},
    "configs": {"dcgmExporter": "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n"
                                "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, double-bit ECC errors\n"
                                "DCGM_FI_DEV_ROW_REMAP_PENDING, gauge, row remap pending\n"},
}

CONFIGS = {
    "defaults": RULES,
    "pools and node status": {**RULES, **POOLS, **NODE_STATUS},
    "our agents": with_agents({**RULES, **POOLS}),
    "our agents with node status": with_agents({**RULES, **POOLS, **NODE_STATUS}),
    "nvidia node status under our agents": with_agents({**RULES, **NODE_STATUS},
                                                       overrides={"nodeStatusExporter": "nvidia"}),
    "own csv": {**RULES, **POOLS, **ECC_AND_REMAP},
}


def _notes(document: dict[str, Any]) -> list[str]:
    return monitoring_notes(parse_config(document))


def _noted(document: dict[str, Any]) -> dict[str, str]:
    """Alert name -> the note that names it."""
    return {name: group.note() for group in left_out_alerts(parse_config(document)) for name in group.alerts}


@pytest.mark.parametrize("document", CONFIGS.values(), ids=CONFIGS.keys())
def test_every_alert_is_either_rendered_or_named_in_one_note(document: dict[str, Any]) -> None:
    rendered = {item["alert"] for item in rules_of(render_prometheus_rule(parse_config(document))) if "alert" in item}
    groups = left_out_alerts(parse_config(document))
    named = [name for group in groups for name in group.alerts]
    assert len(named) == len(set(named))
    assert rendered.isdisjoint(named)
    assert rendered | set(named) == {alert.name for alert in ALERTS}
    assert len(_notes(document)) == len(groups)


def test_with_the_default_collectors_the_ecc_and_row_remap_alerts_are_noted_with_their_fields() -> None:
    notes = _noted(RULES)
    for alert, field in (("GpuEccDoubleBitErrors", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
                         ("GpuRowRemapPending", "DCGM_FI_DEV_ROW_REMAP_PENDING"),
                         ("GpuPowerThrottling", "DCGM_FI_DEV_POWER_VIOLATION")):
        assert f"{alert} ({field})" in notes[alert]
        assert "list those fields in configs.dcgmExporter" in notes[alert]
        assert "operator.dcgmExporter.config.name" in notes[alert]
    assert not {"GpuEccDoubleBitErrors", "GpuRowRemapPending"} & set(_noted({**RULES, **ECC_AND_REMAP}))


@pytest.mark.parametrize("csv", ["dcgm-exporter/default-counters.csv", "dcgm-exporter/dcp-metrics-included.csv"])
def test_only_fields_dcgm_exporter_does_not_collect_by_default_are_left_to_a_note(csv: str) -> None:
    """A field dcgm-exporter's default lists collect belongs in ours, not in a note: the fields the notes name are
    commented out of (ECC, violations) or absent from (ROW_REMAP_PENDING) NVIDIA's etc/ CSVs."""
    collected = {field.field for field in parse_metrics_csv(reference_file(csv).read_text(encoding="utf-8"))}
    noted = {field for group in left_out_alerts(parse_config(RULES)) for fields in group.alerts.values()
             for field in fields}
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_PENDING"} <= noted
    assert not noted & collected


def test_each_remedy_names_the_setting_that_brings_the_alerts_back() -> None:
    defaults = _noted(RULES)
    assert "set operator.nodeStatusExporter.enabled: true" in defaults["GpuNodeDriverNotReady"]
    assert "describe the AKS GPU pools under pools" in defaults["GpuLost"]
    assert "no agents image configured" in defaults["GpuDriverUpgradeFailed"]
    ours = _noted(with_agents({**RULES, **POOLS}))
    assert "run NVIDIA's dcgm-exporter (agents.overrides: {dcgmExporter: nvidia})" in ours["GpuThermalThrottling"]
    assert "list those fields in configs.dcgmExporter" in ours["GpuEccDoubleBitErrors"]  # ours reads ECC
    assert ours["GpuDriverUpgradeFailed"].endswith("set operator.nodeStatusExporter.enabled: true")
    overridden = _noted(CONFIGS["nvidia node status under our agents"])
    assert "agents.overrides.nodeStatusExporter" in overridden["GpuMigReconfigurationFailed"]
    assert "GpuLost" not in _noted({**RULES, **POOLS})


def _write(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return str(path)


def test_render_prints_the_notes_only_where_it_renders_the_rule(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", _write(tmp_path, RULES)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "PrometheusRule leaves out" in line]
    assert notes == [f"note: {note}" for note in _notes(RULES)] and notes
    assert main(["render", "-f", _write(tmp_path, {"monitoring": {"prometheusRules": False}, **RULES})]) == 0
    assert "PrometheusRule leaves out" not in capsys.readouterr().err
