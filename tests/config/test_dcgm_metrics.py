"""The metrics CSV as a typed list: written out as dcgm-exporter's CSV, each entry checked, our fields kept in sync."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.dcgm_metrics import AGENT_READABLE_FIELDS, parse_metrics_csv
from gpu_operator.render import render
from gpu_operator.render.monitoring.exporter_fields import emitted_metrics
from tests.support.agents import with_agents
from tests.support.reference import reference_file

NAMED = {"operator": {"dcgmExporter": {"config": {"name": "gpu-metrics"}}}}


def _document(metrics: Any) -> dict[str, Any]:
    return {**NAMED, "configs": {"dcgmExporter": metrics}}


def test_a_typed_list_becomes_the_csv_configmap() -> None:
    config = parse_config(_document([
        {"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "GPU temperature (in C)."},
        {"field": "DCGM_FI_DEV_XID_ERRORS", "type": "gauge", "help": "Last XID, with a comma, kept."},
        {"field": "DCGM_FI_DRIVER_VERSION", "type": "label"},
    ]))
    fields = parse_metrics_csv(config.configs.dcgm_exporter or "")
    assert [(f.field, f.kind, f.help) for f in fields] == [
        ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
        ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Last XID, with a comma, kept."),
        ("DCGM_FI_DRIVER_VERSION", "label", ""),
    ]
    [configmap] = [o for o in render(config) if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "gpu-metrics"]
    assert configmap["data"]["dcgm-metrics.csv"] == config.configs.dcgm_exporter


@pytest.mark.parametrize(("metrics", "words"), [
    ([{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "histogram"}], "[0].type"),
    ([{"field": "GPU_TEMP", "type": "gauge"}], "[0].field"),
    ([{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge"}, {"type": "gauge"}], "[1].field"),
    ([{"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "unit": "C"}], "[0].unit"),
    ([], "list at least one field"),
])
def test_bad_entries_name_their_index_and_key(metrics: list[dict[str, Any]], words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(_document(metrics))
    [problem] = raised.value.problems
    assert problem.path == "configs.dcgmExporter" and words in problem.message, str(problem)


def test_the_config_layers_field_list_is_the_exporters() -> None:
    assert AGENT_READABLE_FIELDS == set(FIELD_SOURCES)


# -- dcgm-exporter's own counters (DCGM_EXP_*) ---------------------------------------------------------------------

NVIDIA = {"agents": {"implementation": "nvidia"}}


def _exporter_counters() -> list[str]:
    """The DCGM_EXP_ lines dcgm-exporter's etc/default-counters.csv carries (commented out): its own counters,
    internal/pkg/counters/const.go `DCGMExp*` (XID and clock-event counts, GPU health, NVLink P2P status)."""
    text = reference_file("dcgm-exporter/default-counters.csv").read_text(encoding="utf-8")
    return re.findall(r"^#\s*(DCGM_EXP_[A-Z0-9_]+)\s*,", text, flags=re.MULTILINE)


def test_the_exporters_own_counters_are_accepted_as_text_and_as_a_typed_list() -> None:
    """internal/pkg/counters/counter_config.go `ExtractCounters`: a name go-dcgm does not know is looked up among
    the exporter's counters (`IdentifyMetricType`) and kept as an exporter counter; it becomes a series of its own
    (internal/pkg/collector/collector_factory.go starts its collector), which the alerts and panels may read."""
    names = _exporter_counters()
    assert len(names) == 4
    text = "".join(f"{name}, counter, {name.lower()}\n" for name in names)
    typed = [{"field": name, "type": "counter", "help": name.lower()} for name in names]
    for metrics in (text, typed):
        config = parse_config({**NVIDIA, **_document(metrics)})
        assert [field.field for field in parse_metrics_csv(config.configs.dcgm_exporter or "")] == names
        assert set(names) <= emitted_metrics(config)


@pytest.mark.parametrize(("line", "words"), [
    ("DCGM_EXP_XID_ERROR_COUNT, counter, XIDs", "did you mean DCGM_EXP_XID_ERRORS_COUNT?"),
    ("DCGM_EXP_XID_ERRORS_COUNT, label, XIDs", "one of dcgm-exporter's own series, never a label"),
    ("DCGM_EXP_GPU_HEALTH_STATUS, histogram, health", "type 'histogram' must be one of"),
])
def test_a_bad_exporter_counter_line_is_refused_naming_the_fix(line: str, words: str) -> None:
    """`ExtractCounters` refuses an unknown DCGM_EXP_ name ("could not find DCGM field"); it keeps an exporter
    counter before it checks the type, so a `label` would be served as `# TYPE <name> label`, which Prometheus's
    text parser refuses (the whole scrape fails: "unknown metric type")."""
    with pytest.raises(ConfigError) as raised:
        parse_config({**NVIDIA, **_document(line + "\n")})
    [problem] = raised.value.problems
    assert problem.path == "configs.dcgmExporter" and words in problem.message, str(problem)


def test_our_exporter_refuses_the_exporters_own_counters_with_the_way_out() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(with_agents(_document("DCGM_EXP_XID_ERRORS_COUNT, counter, XIDs\n")))
    [problem] = [p for p in raised.value.problems if p.path == "configs.dcgmExporter"]
    assert "cannot read DCGM_EXP_XID_ERRORS_COUNT" in problem.message
    assert "agents.overrides: {dcgmExporter: nvidia}" in problem.message
