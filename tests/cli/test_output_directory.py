"""`render -o DIR`: every file rendered in memory first, then written all or nothing, with the NFD chart's values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import gpu_operator.manifests
from gpu_operator.cli import main
from gpu_operator.config import load_config
from gpu_operator.render import render
from gpu_operator.render.nfd import nfd_chart
from tests.cli.support import snapshot

VALUES = "helm/node-feature-discovery-values.yaml"
#: A document without InfiniBand pools: no Network Operator, so the GPU operator's NFD chart is installed.
NO_NETWORK = Path(__file__).parents[2] / "examples" / "configs" / "time-slicing.yaml"


def test_the_nfd_charts_values_are_written_beside_the_manifests(tmp_path: Path) -> None:
    assert main(["render", "-f", str(NO_NETWORK), "-o", str(tmp_path)]) == 0
    chart = nfd_chart(load_config(NO_NETWORK))
    assert chart is not None
    text = (tmp_path / VALUES).read_text()
    assert yaml.safe_load(text) == chart.values
    header = text.split("\n", 1)[0]
    assert header == (f"# Helm chart node-feature-discovery {chart.version} from {chart.chart}, "
                      f"namespace {chart.namespace}:")
    assert f"helm template node-feature-discovery {chart.chart} --version {chart.version}" in text


def test_the_header_names_the_chart_and_where_its_values_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", "-f", str(NO_NETWORK), "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"wrote {len(render(load_config(NO_NETWORK)))} Kubernetes objects to {tmp_path}/" in err
    assert ("wrote the values of Helm chart node-feature-discovery 0.19.0 from "
            "oci://registry.k8s.io/nfd/charts/node-feature-discovery in namespace gpu-operator to "
            f"{tmp_path / VALUES}") in err


def test_the_summary_lists_the_chart_with_its_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(NO_NETWORK), "--summary"]) == 0
    out = capsys.readouterr().out
    chart = nfd_chart(load_config(NO_NETWORK))
    assert chart is not None
    line = next(line for line in out.splitlines() if line.startswith("plus Helm chart"))
    assert line == (f"plus Helm chart node-feature-discovery {chart.version} from {chart.chart} in namespace "
                    f"{chart.namespace} (Node Feature Discovery, installed by GpuOperator), with values:")
    values = out.split(line + "\n", 1)[1].split("\n\n", 1)[0]
    assert yaml.safe_load(values) == chart.values


def test_stdout_says_the_chart_comes_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", str(NO_NETWORK)]) == 0
    assert "note: GpuOperator also installs Helm chart" in capsys.readouterr().err


def test_without_nfd_no_values_file_and_no_chart_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("nfd: {enabled: false}\n")
    assert main(["render", "-f", str(config), "-o", str(tmp_path / "out"), "--summary"]) == 0
    assert not (tmp_path / "out" / "helm").exists()
    assert "Helm chart" not in capsys.readouterr().out


def test_a_previous_renders_files_are_replaced_and_others_kept(tmp_path: Path) -> None:
    mine = {"notes.txt": "user", "azure/notes.json": "{}", "helm/README": "user", "9999-keep.yml": "user"}
    stale = ["9999-configmap-gone.yaml", "azure/agentpool-gone.json", "helm/old-chart-values.yaml"]
    for name in [*mine, *stale]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(mine.get(name, "stale"))
    assert main(["render", "-f", str(NO_NETWORK), "-o", str(tmp_path)]) == 0
    for name, content in mine.items():
        assert (tmp_path / name).read_text() == content
    for name in stale:
        assert not (tmp_path / name).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gpu-operator-render-")]


def _fail_on_fifth_write(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Path.write_text
    calls = []

    def write_text(self: Path, *args: object, **kwargs: object) -> int:
        calls.append(self)
        if len(calls) == 5:
            raise OSError(28, "No space left on device", str(self))
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", write_text)


def test_a_failed_write_leaves_an_existing_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", "-f", str(NO_NETWORK), "-o", str(tmp_path)]) == 0
    (tmp_path / "notes.txt").write_text("user")
    before = snapshot(tmp_path)
    config = tmp_path.parent / f"{tmp_path.name}-time-slicing.yaml"
    config.write_text("operator: {mig: {strategy: mixed}}\n")
    _fail_on_fifth_write(monkeypatch)
    assert main(["render", "-f", str(config), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "No space left on device; nothing was written" in err and "Traceback" not in err
    assert snapshot(tmp_path) == before


def test_a_failed_write_removes_the_directories_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_on_fifth_write(monkeypatch)
    assert main(["render", "-o", str(tmp_path / "a" / "b")]) == 2
    assert "nothing was written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_refuses_files_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(**kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(kwargs["dir"]))

    monkeypatch.setattr(gpu_operator.manifests.tempfile, "mkdtemp", refuse)
    assert main(["render", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'out'}: cannot write {tmp_path / 'out'}: Permission denied; nothing was written" in err
    assert list(tmp_path.iterdir()) == []


def test_a_directory_without_write_permission_is_refused_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu_operator.manifests.os, "access", lambda path, mode: Path(path) != tmp_path)
    assert main(["render", "-o", str(tmp_path / "out")]) == 2
    assert f"{tmp_path} is not writable by this user" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits; the case above covers the check")
def test_a_read_only_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        assert main(["render", "-o", str(locked / "out")]) == 2
        assert "is not writable by this user" in capsys.readouterr().err
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


#: source → (where the chart comes from, as the values file's first line says; the `helm template` chart arguments)
SOURCES: dict[str, tuple[str, str]] = {
    "{oci: 'oci://mirror.example.com/nfd'}": (
        "oci://mirror.example.com/nfd/node-feature-discovery",
        "oci://mirror.example.com/nfd/node-feature-discovery --version 0.19.0"),
    "{repository: 'https://charts.example.com/nfd'}": (
        "https://charts.example.com/nfd",
        "node-feature-discovery --repo https://charts.example.com/nfd --version 0.19.0"),
    "{path: charts/nfd}": ("charts/nfd", "charts/nfd"),
}


@pytest.mark.parametrize("source", SOURCES)
def test_the_values_file_says_where_the_chart_comes_from(tmp_path: Path, source: str) -> None:
    (tmp_path / "charts" / "nfd").mkdir(parents=True)
    (tmp_path / "charts" / "nfd" / "Chart.yaml").write_text("name: node-feature-discovery\nversion: 0.19.0\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"nfd:\n  chart: {source}\n")
    assert main(["render", "-f", str(config), "-o", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / VALUES).read_text()
    origin, arguments = SOURCES[source]
    first_line = text.split("\n", 1)[0]
    assert first_line == f"# Helm chart node-feature-discovery 0.19.0 from {origin}, namespace gpu-operator:"
    assert f"# Its objects: helm template node-feature-discovery {arguments} \\\n" in text
    assert ("the chart's path is relative to it" in text) == source.startswith("{path")
