"""The collectors file: parsing, the packaged default list, and its parity with dcgm-exporter's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.metrics_exporter.counters import (
    UPSTREAM_DEFAULT_PATHS,
    Counter,
    CountersError,
    load_counters,
    packaged_default_counters,
    parse_counters,
)
from tests.support.reference import reference_file


def test_packaged_list_selects_dcgm_exporters_default_fields() -> None:
    upstream = parse_counters(reference_file("dcgm-exporter/default-counters.csv").read_text())
    assert packaged_default_counters() == upstream


def test_operator_list_has_the_same_active_fields() -> None:
    operator = parse_counters(reference_file("dcgm-exporter/dcp-metrics-included.csv").read_text())
    assert operator == packaged_default_counters()


def test_packaged_list_content() -> None:
    counters = {c.name: c for c in packaged_default_counters()}
    assert len(counters) == 26
    assert counters["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == Counter(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."
    )
    assert counters["DCGM_FI_DRIVER_VERSION"].is_label
    assert counters["DCGM_FI_DEV_VGPU_LICENSE_STATUS"].help == "vGPU License status"


def test_parsing_rules() -> None:
    text = (
        "# comment\n\n  DCGM_FI_DEV_DEC_UTIL ,  gauge, Decoder utilization (in %).\n"
        "DCGM_FI_DEV_DEC_UTIL, counter, again\n"
    )
    assert parse_counters(text) == (Counter("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DCGM_FI_DEV_GPU_TEMP, gauge\n", "expected '<field>, <type>, <help>'"),
        ("DCGM_FI_DEV_GPU_TEMP, gauge, a, b\n", "got 4 fields"),
        ("GPU_TEMP, gauge, help\n", "not a DCGM field name"),
        ("DCGM_FI_DEV_GPU_TEMP, meter, help\n", "unknown Prometheus type 'meter'"),
        ("# only comments\n", "names no fields"),
    ],
)
def test_parsing_errors(text: str, message: str) -> None:
    with pytest.raises(CountersError, match=message):
        parse_counters(text)


def test_absent_upstream_paths_fall_back_to_the_packaged_list(tmp_path: Path) -> None:
    for path in UPSTREAM_DEFAULT_PATHS:
        if not Path(path).exists():
            assert load_counters(path) == packaged_default_counters()
    with pytest.raises(CountersError, match="cannot read collectors file"):
        load_counters(str(tmp_path / "missing.csv"))


def test_a_custom_file_is_read(tmp_path: Path) -> None:
    custom = tmp_path / "dcgm-metrics.csv"
    custom.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    assert load_counters(str(custom)) == (Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),)
    custom.write_text("DCGM_FI_DEV_GPU_TEMP, gauge\n")
    with pytest.raises(CountersError, match=f"{custom}: line 1"):
        load_counters(str(custom))
