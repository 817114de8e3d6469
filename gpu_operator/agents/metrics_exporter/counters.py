"""The collectors file: which DCGM fields become which Prometheus metrics (`--collectors`, a CSV).

Each non-comment line is `<field name>, <type>, <HELP text>`: the field name is DCGM's (`DCGM_FI_DEV_GPU_TEMP`)
and becomes the metric name; the type is `gauge` or `counter` for a series of its own, or `label` for a field
whose value becomes a label on every series of the GPU (`DCGM_FI_DRIVER_VERSION="570.124.06"`). Lines starting
with `#` and blank lines are ignored. dcgm-exporter's images carry such files under `/etc/dcgm-exporter/`; this
package ships its own default (`default-counters.csv`, the same selection), used when `--collectors` names one
of those well-known paths and no file is there.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "COUNTER",
    "DEFAULT_COLLECTORS",
    "GAUGE",
    "LABEL",
    "METRIC_TYPES",
    "UPSTREAM_DEFAULT_PATHS",
    "Counter",
    "CountersError",
    "load_counters",
    "packaged_default_counters",
    "parse_counters",
]

_log = logging.getLogger(__name__)

GAUGE = "gauge"
COUNTER = "counter"
LABEL = "label"
#: The types a collectors line may name (histogram and summary are accepted upstream but never produced).
METRIC_TYPES = frozenset({GAUGE, COUNTER, LABEL, "histogram", "summary"})

#: dcgm-exporter's default `--collectors`.
DEFAULT_COLLECTORS = "/etc/dcgm-exporter/default-counters.csv"
#: Paths of the files in dcgm-exporter's image; the packaged list stands in for them when they are absent.
UPSTREAM_DEFAULT_PATHS = frozenset({DEFAULT_COLLECTORS, "/etc/dcgm-exporter/dcp-metrics-included.csv"})
_PACKAGED = "default-counters.csv"
_FIELDS_PER_LINE = 3
_FIELD_NAME = re.compile(r"^DCGM_(FI|EXP)_[A-Z0-9_]+\Z")


class CountersError(ValueError):
    """A collectors file that cannot be read or parsed."""


@dataclass(frozen=True, slots=True)
class Counter:
    """One collected field: its name (also the metric name), Prometheus type and HELP text."""

    name: str
    type: str
    help: str

    @property
    def is_label(self) -> bool:
        return self.type == LABEL


def _counter(row: list[str], number: int) -> Counter:
    if len(row) != _FIELDS_PER_LINE:
        raise CountersError(f"line {number}: expected '<field>, <type>, <help>', got {len(row)} fields")
    name, kind, help_text = (part.strip() for part in row)
    if not _FIELD_NAME.match(name):
        raise CountersError(f"line {number}: {name!r} is not a DCGM field name such as DCGM_FI_DEV_GPU_TEMP")
    if kind not in METRIC_TYPES:
        raise CountersError(f"line {number}: unknown Prometheus type {kind!r} for {name}")
    return Counter(name, kind, help_text)


def parse_counters(text: str) -> tuple[Counter, ...]:
    """The counters of a collectors file, in file order (a repeated field keeps its first line)."""
    counters: dict[str, Counter] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        counter = _counter(next(csv.reader(io.StringIO(stripped), skipinitialspace=True)), number)
        counters.setdefault(counter.name, counter)
    if not counters:
        raise CountersError("the collectors file names no fields")
    return tuple(counters.values())


def packaged_default_counters() -> tuple[Counter, ...]:
    """The default field list shipped with this package."""
    text = resources.files("gpu_operator.agents.metrics_exporter").joinpath(_PACKAGED).read_text()
    return parse_counters(text)


def load_counters(path: str) -> tuple[Counter, ...]:
    """The counters of `path`; the packaged default when `path` is an absent upstream default file."""
    file = Path(path)
    if not file.exists() and path in UPSTREAM_DEFAULT_PATHS:
        _log.info("%s is not in this image; collecting the packaged default fields", path)
        return packaged_default_counters()
    try:
        text = file.read_text()
    except OSError as error:
        raise CountersError(f"cannot read collectors file {path}: {error}") from error
    try:
        return parse_counters(text)
    except CountersError as error:
        raise CountersError(f"{path}: {error}") from error
