"""Every XID of NVIDIA's XID catalog fires the alert of its fault class, and no other XID does: each code of each
range (144-150 one by one, not only the ends), read from the package's fault catalog rather than from the alert
module's tables.

The fault catalog (`gpu_operator/faults/catalog.yaml`) is generated from NVIDIA/NVSentinel
`health-monitors/syslog-health-monitor/pkg/common/Xid-Catalog.xlsx` (tests/faults/test_generator.py pins it to
the reference data). dcgm-exporter reports each XID as `DCGM_FI_DEV_XID_ERRORS{err_code="<code>"}`
(`internal/pkg/collector/gpu_collector.go` `toMetric`), which the alerts select with a regex Prometheus anchors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import promql_parser

from gpu_operator.faults import FAULT_CLASSES, catalog
from tests.render.monitoring.promtool_cases import (
    expected,
    needs_promtool,
    promtool_test,
    render_rule,
    rules_of,
    series,
)


def _hardware() -> frozenset[int]:
    """The catalog's XIDs whose class takes a node out of service by default."""
    return frozenset(code for code, entry in catalog().xids.items() if FAULT_CLASSES[entry.fault_class].quarantine)


def _application() -> frozenset[int]:
    return frozenset(code for code, entry in catalog().xids.items() if entry.fault_class == "application")


def _err_code_regex(rule: dict[str, Any], alert: str) -> str:
    [item] = [r for r in rules_of(rule) if r.get("alert") == alert]
    node = promql_parser.parse(item["expr"])
    while not isinstance(node, promql_parser.VectorSelector):
        node = node.lhs if isinstance(node, promql_parser.BinaryExpr) else node.expr
    [matcher] = [m for m in node.matchers.matchers if m.name == "err_code"]
    assert matcher.op == promql_parser.MatchOp.Re
    return str(matcher.value)


def test_the_catalog_classes_the_xids_the_alerts_name() -> None:
    """The catalog's buckets behind each alert: WORKFLOW_NVLINK5_ERR (144-150) and RESTART_BM (79) are hardware;
    13, 31, 43 and 45 (RESTART_APP, IGNORE, WORKFLOW_XID_45) are application; IGNORE XIDs raise no XID alert."""
    assert set(range(144, 151)) | {79, 48, 154} <= _hardware()
    assert {13, 31, 43, 45} <= _application()
    assert not _hardware() & _application()
    assert {63, 92}.isdisjoint(_hardware() | _application())


def test_the_parsed_regex_of_each_alert_matches_exactly_its_xids() -> None:
    """Prometheus anchors a label regex at both ends: `fullmatch` is what it does to each `err_code`."""
    rule = render_rule({})
    codes = range(0, 1000)
    for alert, wanted in (("GpuXidHardwareError", _hardware()), ("GpuXidApplicationError", _application())):
        regex = re.compile(_err_code_regex(rule, alert))
        assert {code for code in codes if regex.fullmatch(str(code))} == wanted, alert


@needs_promtool
def test_promtool_every_catalog_xid_fires_its_alert_and_no_other(tmp_path: Path) -> None:
    rule = render_rule({})
    inputs, hardware, application = [], [], []
    for index, code in enumerate(sorted(catalog().xids)):
        labels = {"hostname": "n1", "gpu": str(index % 8), "UUID": f"GPU-{index}", "err_code": str(code)}
        inputs.append(series("DCGM_FI_DEV_XID_ERRORS", labels, f"{code}x5"))
        if code in _hardware():
            hardware.append(expected(rule, "GpuXidHardwareError", labels))
        if code in _application():
            application.append(expected(rule, "GpuXidApplicationError", labels))
    assert len(hardware) == len(_hardware()) and len(application) == len(_application())
    promtool_test(tmp_path, rule, [{
        "interval": "1m", "input_series": inputs,
        "alert_rule_test": [{"eval_time": "2m", "alertname": "GpuXidHardwareError", "exp_alerts": hardware},
                            {"eval_time": "2m", "alertname": "GpuXidApplicationError", "exp_alerts": application}],
    }])
