"""dcgm-exporter's metrics CSV: one `DCGM_FI_*, <prometheus type>, <help>` line per collected field.

Blank lines and `#` comments are allowed. The type is `gauge`, `counter` or `label` (label fields become labels
on every series instead of a series of their own). `configs.dcgmExporter` takes the CSV as text, or as a typed
list that is written out as that CSV:

```yaml
configs:
  dcgmExporter:
    - {field: DCGM_FI_DEV_GPU_TEMP, type: gauge, help: GPU temperature (in C).}
    - {field: DCGM_FI_DEV_XID_ERRORS, type: gauge, help: Value of the last XID error encountered.}
```

Every field must be one dcgm-exporter knows (:data:`DCGM_FIELD_NAMES`, shipped as `builtin/dcgm-fields.csv`): NVIDIA's
exporter refuses the whole CSV at start-up over one unknown name, so a typo (`DCGM_FI_DEV_GPU_TEMPERATURE`) is
refused here, with the nearest names. The `DCGM_EXP_` names are dcgm-exporter's own series (its collectors count
XIDs and clock events over a window, report DCGM health and NVLink P2P status): it takes them from the CSV before
the DCGM fields and never makes them labels, so they are `counter` or `gauge`. Our metrics exporter reads a fixed set of fields (:data:`AGENT_READABLE_FIELDS`); a gauge or counter outside it
would silently produce no series, so a config that runs our exporter with such a field is refused.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from gpu_operator.config.base import ConfigModel

__all__ = [
    "AGENT_READABLE_FIELDS",
    "DCGM_FIELD_NAMES",
    "METRIC_TYPES",
    "DcgmMetric",
    "MetricField",
    "check_metrics_csv",
    "metrics_csv",
    "parse_metrics_csv",
]

METRIC_TYPES = ("gauge", "counter", "label")
#: A field name, matched whole (`fullmatch`; the typed list's pattern runs in pydantic's Rust engine, whose `$`
#: is the end of the text).
_FIELD = re.compile(r"DCGM_(FI|EXP)_[A-Z0-9_]+")
#: The prefix of dcgm-exporter's own counters (internal/pkg/counters/const.go).
_EXPORTER_COUNTER = "DCGM_EXP_"

#: The fields `gpu-operator-agent metrics-exporter` reads through NVML (its `fields.FIELD_SOURCES`, which a test
#: keeps equal to this set; the config layer does not import the agents).
AGENT_READABLE_FIELDS = frozenset({
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING",
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
})


#: The field names file: NVIDIA/go-dcgm's field table (what dcgm-exporter's CSV reader looks names up in) plus
#: the exporter's own DCGM_EXP_ counters; its header says where each part comes from.
_FIELD_NAMES_FILE = Path(__file__).with_name("builtin") / "dcgm-fields.csv"


@cache
def _field_names() -> frozenset[str]:
    lines = _FIELD_NAMES_FILE.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


#: Every field name NVIDIA's dcgm-exporter accepts in its metrics CSV.
DCGM_FIELD_NAMES: frozenset[str] = _field_names()


def _unknown_field(field: str) -> str:
    near = difflib.get_close_matches(field, sorted(DCGM_FIELD_NAMES), n=3, cutoff=0.8)
    hint = f"did you mean {' or '.join(near)}?" if near else "see DCGM's field list (dcgm_fields.h)"
    return (f"{field!r} is not a DCGM field that dcgm-exporter knows (it refuses the whole CSV at start-up, "
            f"\"could not find DCGM field\"): {hint}")


class DcgmMetric(ConfigModel):
    """One line of the metrics CSV, typed."""

    field: str = Field(pattern=f"^{_FIELD.pattern}$", description="a DCGM field name such as DCGM_FI_DEV_GPU_TEMP")
    type: Literal["gauge", "counter", "label"]
    help: str = Field(default="", description="the series' HELP text")


def metrics_csv(metrics: Sequence[DcgmMetric]) -> str:
    """The CSV text dcgm-exporter (and our exporter) read, one line per metric."""
    if not metrics:
        raise ValueError("the metrics list is empty: list at least one field, or leave configs.dcgmExporter out")
    def help_text(text: str) -> str:
        one_line = " ".join(text.split())
        return '"' + one_line.replace('"', '""') + '"' if "," in one_line or '"' in one_line else one_line

    return "".join(f"{m.field}, {m.type}, {help_text(m.help)}\n" for m in metrics)


class MetricField(tuple):
    """(field name, prometheus type, help) as read from one CSV line."""

    __slots__ = ()

    def __new__(cls, field: str, kind: str, help_text: str) -> MetricField:
        return super().__new__(cls, (field, kind, help_text))

    @property
    def field(self) -> str:
        return self[0]

    @property
    def kind(self) -> str:
        return self[1]

    @property
    def help(self) -> str:
        return self[2]


def parse_metrics_csv(text: str) -> list[MetricField]:
    """Parse the CSV; raise ValueError naming the first bad line."""
    fields: list[MetricField] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        row = next(csv.reader(io.StringIO(stripped), skipinitialspace=True))
        if len(row) < 3:
            raise ValueError(f"line {number}: expected 'DCGM_FI_<FIELD>, <type>, <help>', got {stripped!r}")
        field, kind, help_text = row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()
        if not _FIELD.fullmatch(field):
            raise ValueError(f"line {number}: {field!r} is not a DCGM field name such as DCGM_FI_DEV_GPU_TEMP")
        if field not in DCGM_FIELD_NAMES:
            raise ValueError(f"line {number}: {_unknown_field(field)}")
        if kind not in METRIC_TYPES:
            raise ValueError(f"line {number}: type {kind!r} must be one of {', '.join(METRIC_TYPES)}")
        if kind == "label" and field.startswith(_EXPORTER_COUNTER):
            raise ValueError(f"line {number}: {field} is one of dcgm-exporter's own series, never a label on the "
                             "others (it would be served with a `label` TYPE Prometheus cannot parse): give it "
                             "type counter")
        fields.append(MetricField(field, kind, help_text))
    if not fields:
        raise ValueError("the metrics CSV lists no fields")
    return fields


def check_metrics_csv(text: str) -> str:
    parse_metrics_csv(text)
    return text
