"""dcgm-exporter's metrics CSV: one `DCGM_FI_*, <prometheus type>, <help>` line per collected field.

Blank lines and `#` comments are allowed. The type is `gauge`, `counter` or `label` (label fields become labels
on every series instead of a series of their own).
"""

from __future__ import annotations

import csv
import io
import re

__all__ = ["MetricField", "parse_metrics_csv", "check_metrics_csv", "METRIC_TYPES"]

METRIC_TYPES = ("gauge", "counter", "label")
_FIELD = re.compile(r"^DCGM_(FI|EXP)_[A-Z0-9_]+$")


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
        if not _FIELD.match(field):
            raise ValueError(f"line {number}: {field!r} is not a DCGM field name such as DCGM_FI_DEV_GPU_TEMP")
        if kind not in METRIC_TYPES:
            raise ValueError(f"line {number}: type {kind!r} must be one of {', '.join(METRIC_TYPES)}")
        fields.append(MetricField(field, kind, help_text))
    if not fields:
        raise ValueError("the metrics CSV lists no fields")
    return fields


def check_metrics_csv(text: str) -> str:
    parse_metrics_csv(text)
    return text
