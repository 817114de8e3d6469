"""The metrics CSV as a typed list: written out as dcgm-exporter's CSV, each entry checked, our fields kept in sync."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES
from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.dcgm_metrics import AGENT_READABLE_FIELDS, parse_metrics_csv
from gpu_operator.render import render

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
