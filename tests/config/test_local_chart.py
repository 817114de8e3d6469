"""Reading a chart on disk: its name and version from a directory or a packaged chart, and what is not a chart."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_operator.config.local_chart import LocalChart, LocalChartError, read_local_chart
from tests.support.reference import reference_chart


def _package(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return path


@pytest.mark.parametrize(("file_name", "name", "version"), [
    ("node-feature-discovery-0.19.0.tgz", "node-feature-discovery", "0.19.0"),
    ("network-operator-26.4.1.tgz", "network-operator", "26.4.1"),
    ("dra-driver-nvidia-gpu-0.4.1.tgz", "dra-driver-nvidia-gpu", "0.4.1"),
])
def test_the_published_charts_are_read(file_name: str, name: str, version: str) -> None:
    assert read_local_chart(reference_chart(file_name)) == LocalChart(name, version)


def test_a_directory_and_versions_as_written(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: network-operator\nversion: 1.10\n")
    assert read_local_chart(tmp_path) == LocalChart("network-operator", "1.10")


def test_a_subcharts_chart_yaml_is_not_the_charts(tmp_path: Path) -> None:
    archive = _package(tmp_path / "c.tgz", {
        "network-operator/charts/node-feature-discovery/Chart.yaml": "name: node-feature-discovery\nversion: 0.1.0\n",
        "network-operator/Chart.yaml": "name: network-operator\nversion: 26.4.1\n",
    })
    assert read_local_chart(archive) == LocalChart("network-operator", "26.4.1")


@pytest.mark.parametrize(("files", "message"), [
    ({"c/values.yaml": "a: 1\n"}, "is an archive without <chart>/Chart.yaml"),
    ({"Chart.yaml": "name: x\nversion: 1.0.0\n"}, "is an archive without <chart>/Chart.yaml"),
    ({"c/Chart.yaml": "name: x\n"}, "has a c/Chart.yaml that gives no version"),
    ({"c/Chart.yaml": "- name\n"}, "has a c/Chart.yaml that is not a mapping"),
    ({"c/Chart.yaml": "name: [x\n"}, "has a c/Chart.yaml that is not readable YAML"),
])
def test_an_archive_that_is_not_a_chart(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(LocalChartError, match=message.replace("[", r"\[")):
        read_local_chart(_package(tmp_path / "c.tgz", files))


@pytest.mark.parametrize(("make", "message"), [
    (lambda root: root / "absent.tgz", "does not exist"),
    (lambda root: root, "is a directory without Chart.yaml"),
    (lambda root: _write(root / "c.tgz", b"not gzip"), "is not a packaged chart, a gzipped tar"),
    (lambda root: _write(root / "c.tgz", gzip.compress(b"not a tar")), "is not a packaged chart"),
    (lambda root: _write(root / "c.tgz", gzip.compress(b"x" * 600)[:20]), "is not a packaged chart"),
])
def test_what_is_not_a_chart_says_what_it_is(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    with pytest.raises(LocalChartError, match=message):
        read_local_chart(make(tmp_path))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
