"""Rules about the charts' sources that need the chart's identity or the disk: one table row per installed chart.

A source's own form (one kind, an `https://` URL, an `oci://` path) is checked on the model
(:mod:`gpu_operator.config.chart_source`). What needs more is checked here, when the config is read, so that a
user never installs a chart other than the one whose values the stack renders:

* an `oci` path that already ends with the chart's name (Helm appends it, and would look for `.../nfd/nfd`);
* a local `path` must exist, be a chart (a directory with `Chart.yaml`, or a packaged `.tgz`), and its
  `Chart.yaml` must give the expected `name` and `version`. The version is the section's `chartVersion` where the
  section has one (set it to install another version on purpose), else the pinned version the stack renders for.

A relative path is read against `base`: the directory of the file the config came from, or the working
directory (see :mod:`gpu_operator.config.chart_source`). Sources are checked whether or not their section installs
its chart in this stack: a path that names no chart is a mistake either way, and would surface later, on the
environment that turns the section on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpu_operator.config.chart_source import ChartSource, PublishedChart
from gpu_operator.config.document import NFD_CHART, GpuStackConfig
from gpu_operator.config.dra import DRA_CHART
from gpu_operator.config.errors import Problem
from gpu_operator.config.local_chart import LocalChartError, read_local_chart
from gpu_operator.config.network import NETWORK_CHART

__all__ = ["INSTALLED_CHARTS", "InstalledChart", "chart_source_problems"]


@dataclass(frozen=True)
class InstalledChart:
    """A chart the stack installs: its config section, the chart as published, and the keys that choose it."""

    section: str
    published: PublishedChart
    source: Callable[[GpuStackConfig], ChartSource]
    version: Callable[[GpuStackConfig], str]
    version_key: str | None
    """The key that sets the version (`nfd.chartVersion`); None where the version is pinned."""


INSTALLED_CHARTS: tuple[InstalledChart, ...] = (
    InstalledChart("nfd", NFD_CHART, lambda doc: doc.nfd.chart, lambda doc: doc.nfd.chart_version,
                   "nfd.chartVersion"),
    InstalledChart("network", NETWORK_CHART, lambda doc: doc.network.chart, lambda doc: doc.network.chart_version,
                   "network.chartVersion"),
    InstalledChart("dra", DRA_CHART, lambda doc: doc.dra.chart, lambda doc: DRA_CHART.version, None),
)


def _read_against(base: Path | None) -> str:
    return "the working directory" if base is None or str(base) in ("", ".") else str(base)


def _oci_problems(chart: InstalledChart, source: ChartSource) -> Iterator[Problem]:
    name = chart.published.name
    if source.oci is not None and source.oci.rsplit("/", 1)[-1] == name:
        yield Problem(f"{chart.section}.chart.oci", (
            f"{source.oci!r} ends with the chart's name, which Helm appends itself (it would pull "
            f"{source.oci}/{name}): give the path the chart is under, {source.oci.rsplit('/', 1)[0]}"))


def _path_problems(chart: InstalledChart, doc: GpuStackConfig, base: Path | None) -> Iterator[Problem]:
    source = chart.source(doc)
    if source.path is None:
        return
    key, name, written = f"{chart.section}.chart.path", chart.published.name, source.path
    location = Path(written) if base is None else base / written
    try:
        found = read_local_chart(location)
    except LocalChartError as error:
        relative = "" if Path(written).is_absolute() else f"; a relative path is read against {_read_against(base)}"
        yield Problem(key, f"{written!r} {error}{relative}. Give the path of the {name} chart: its directory "
                           f"(holding Chart.yaml, as `helm pull --untar` writes it) or its packaged .tgz")
        return
    if found.name != name:
        yield Problem(key, f"{written!r} holds the chart {found.name!r}, not {name}: the stack renders "
                           f"{chart.section}'s values for {name}; give the path of that chart")
        return
    expected = chart.version(doc)
    if found.version == expected:
        return
    if chart.version_key is None:
        yield Problem(key, f"{written!r} holds {name} {found.version}, but the stack renders for {name} {expected} "
                           f"(pinned): give the path of the {expected} chart")
    else:
        yield Problem(key, f"{written!r} holds {name} {found.version}, but {chart.version_key} is {expected}: give "
                           f"the path of the {expected} chart, or set {chart.version_key}: '{found.version}' to "
                           "install this one on purpose")


def chart_source_problems(doc: GpuStackConfig, base: Path | None = None) -> list[Problem]:
    """Every problem with the charts' sources of a document that passed field validation."""
    problems: list[Problem] = []
    for chart in INSTALLED_CHARTS:
        problems += _oci_problems(chart, chart.source(doc))
        problems += _path_problems(chart, doc, base)
    return problems
