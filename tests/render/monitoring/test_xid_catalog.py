"""Every XID of NVIDIA's XID catalog fires the alert of its class, and no other XID does: each code of each range
(144-150 one by one, not only the ends), read from the catalog itself rather than from our table.

The catalog is NVIDIA/NVSentinel `health-monitors/syslog-health-monitor/pkg/common/Xid-Catalog.xlsx` (reference
data `nvsentinel/Xid-Catalog.xlsx`): sheet `Xids`, column `Code`, and the "Resolution Bucket (Immediate Action)"
column. dcgm-exporter reports each XID as `DCGM_FI_DEV_XID_ERRORS{err_code="<code>"}`
(`internal/pkg/collector/gpu_collector.go` `toMetric`), which the alerts select with a regex Prometheus anchors.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser

from tests.render.monitoring.promtool_cases import (
    expected,
    needs_promtool,
    promtool_test,
    render_rule,
    rules_of,
    series,
)
from tests.support.reference import reference_file

_SHEET = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
#: The catalog's immediate actions that mean a GPU reset or a reboot, or a workflow that ends in one.
RESET_OR_REBOOT_BUCKETS = frozenset({
    "RESET_GPU", "RESTART_BM", "RESTART_VM", "XID_154",
    "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR",
})
#: Beyond the catalog's buckets: 169 (the newer drivers' form of 62) and 171/172 (XID 48's DRAM/SRAM details),
#: which the catalog lists without a bucket, and 63/92/94, kept as degrading hardware (gpu_operator/render/
#: monitoring/xid.py says why).
HARDWARE_BEYOND_BUCKETS = frozenset({169, 171, 172, 63, 92, 94})
APPLICATION = frozenset({13, 31, 43})


def _cells(row: ElementTree.Element, strings: list[str]) -> dict[str, str]:
    cells = {}
    for cell in row.findall(f"{_SHEET}c"):
        column = re.sub(r"\d", "", cell.get("r", ""))
        value = cell.find(f"{_SHEET}v")
        if value is not None and value.text is not None:
            cells[column] = strings[int(value.text)] if cell.get("t") == "s" else value.text
    return cells


@cache
def catalog() -> dict[int, str]:
    """XID code -> its immediate-action bucket ("" where the catalog gives none)."""
    with zipfile.ZipFile(reference_file("nvsentinel/Xid-Catalog.xlsx")) as book:
        shared = ElementTree.fromstring(book.read("xl/sharedStrings.xml"))
        strings = ["".join(t.text or "" for t in item.iter(f"{_SHEET}t")) for item in shared.findall(f"{_SHEET}si")]
        sheet = ElementTree.fromstring(book.read("xl/worksheets/sheet1.xml"))
    rows = [_cells(row, strings) for row in sheet.iter(f"{_SHEET}row")]
    header = {" ".join(name.split()): column for column, name in rows[0].items()}
    code, bucket = header["Code"], header["Resolution Bucket (Immediate Action)"]
    return {int(row[code]): row.get(bucket, "").strip() for row in rows[1:] if row.get(code, "").isdigit()}


def _hardware() -> frozenset[int]:
    return frozenset(c for c, b in catalog().items() if b in RESET_OR_REBOOT_BUCKETS) | HARDWARE_BEYOND_BUCKETS


def _err_code_regex(rule: dict[str, Any], alert: str) -> str:
    [item] = [r for r in rules_of(rule) if r.get("alert") == alert]
    node = promql_parser.parse(item["expr"])
    while not isinstance(node, promql_parser.VectorSelector):
        node = node.lhs if isinstance(node, promql_parser.BinaryExpr) else node.expr
    [matcher] = [m for m in node.matchers.matchers if m.name == "err_code"]
    assert matcher.op == promql_parser.MatchOp.Re
    return str(matcher.value)


def test_the_catalog_has_the_ranges_the_alert_names() -> None:
    assert {code for code, bucket in catalog().items() if bucket == "WORKFLOW_NVLINK5_ERR"} == set(range(144, 151))
    assert {catalog()[code] for code in APPLICATION} <= {"RESTART_APP", "IGNORE"}


def test_the_parsed_regex_of_each_alert_matches_exactly_its_xids() -> None:
    """Prometheus anchors a label regex at both ends: `fullmatch` is what it does to each `err_code`."""
    rule = render_rule({})
    codes = range(0, 1000)
    for alert, wanted in (("GpuXidHardwareError", _hardware()), ("GpuXidApplicationError", APPLICATION)):
        regex = re.compile(_err_code_regex(rule, alert))
        assert {code for code in codes if regex.fullmatch(str(code))} == wanted, alert


@needs_promtool
def test_promtool_every_catalog_xid_fires_its_alert_and_no_other(tmp_path: Path) -> None:
    rule = render_rule({})
    inputs, hardware, application = [], [], []
    for index, code in enumerate(sorted(catalog())):
        labels = {"hostname": "n1", "gpu": str(index % 8), "UUID": f"GPU-{index}", "err_code": str(code)}
        inputs.append(series("DCGM_FI_DEV_XID_ERRORS", labels, f"{code}x5"))
        if code in _hardware():
            hardware.append(expected(rule, "GpuXidHardwareError", labels))
        if code in APPLICATION:
            application.append(expected(rule, "GpuXidApplicationError", labels))
    assert len(hardware) == len(_hardware()) and len(application) == len(APPLICATION)
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [{"eval_time": "2m", "alertname": "GpuXidHardwareError", "exp_alerts": hardware},
                            {"eval_time": "2m", "alertname": "GpuXidApplicationError", "exp_alerts": application}],
    }])
