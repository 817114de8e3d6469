"""A chart on disk, as Helm loads it: a directory holding `Chart.yaml`, or a packaged chart (a gzipped tar).

Only the chart's identity is read (`name` and `version` of its top-level `Chart.yaml`; a packaged chart keeps it
as `<folder>/Chart.yaml`, its subcharts deeper down). Nothing is unpacked and no template is run. Scalars are read
as the strings they are written as, so `version: 1.10` stays `1.10`. Every failure is a :class:`LocalChartError`
whose text says what the path holds instead.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

__all__ = ["LocalChart", "LocalChartError", "read_local_chart"]

CHART_FILE = "Chart.yaml"
#: Chart.yaml files bigger than this are not chart metadata.
_MAX_CHART_FILE = 1 << 20


class LocalChartError(ValueError):
    """The path is not a readable chart; the message says why."""


@dataclass(frozen=True)
class LocalChart:
    """The identity of a chart on disk."""

    name: str
    version: str


def _identity(stream: IO[bytes], where: str) -> LocalChart:
    data = stream.read(_MAX_CHART_FILE + 1)
    if len(data) > _MAX_CHART_FILE:
        raise LocalChartError(f"has a {where} larger than 1 MiB, which is not chart metadata")
    try:
        document: Any = yaml.load(data.decode("utf-8"), Loader=yaml.BaseLoader)  # noqa: S506 - strings only
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise LocalChartError(f"has a {where} that is not readable YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise LocalChartError(f"has a {where} that is not a mapping of chart metadata")
    missing = [key for key in ("name", "version") if not isinstance(document.get(key), str) or not document[key]]
    if missing:
        raise LocalChartError(f"has a {where} that gives no {' and no '.join(missing)}")
    return LocalChart(document["name"], document["version"])


def _from_directory(directory: Path) -> LocalChart:
    chart_file = directory / CHART_FILE
    if not chart_file.is_file():
        raise LocalChartError(f"is a directory without {CHART_FILE}")
    with chart_file.open("rb") as stream:
        return _identity(stream, CHART_FILE)


def _from_archive(archive: Path) -> LocalChart:
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                parts = member.name.removeprefix("./").split("/")
                if len(parts) == 2 and parts[1] == CHART_FILE and member.isfile():
                    stream = tar.extractfile(member)
                    if stream is not None:
                        return _identity(stream, f"{parts[0]}/{CHART_FILE}")
    except (tarfile.TarError, EOFError, OSError) as error:
        raise LocalChartError(f"is not a packaged chart, a gzipped tar ({error})") from None
    raise LocalChartError(f"is an archive without <chart>/{CHART_FILE}")


def read_local_chart(path: Path) -> LocalChart:
    """The name and version of the chart at `path` (a directory or a packaged chart)."""
    if not path.exists():
        raise LocalChartError("does not exist")
    try:
        if path.is_dir():
            return _from_directory(path)
        if not path.is_file():
            raise LocalChartError("is neither a directory nor a regular file")
        return _from_archive(path)
    except OSError as error:
        raise LocalChartError(f"cannot be read ({error.strerror or error})") from None
