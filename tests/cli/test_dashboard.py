"""`gpu-operator dashboard`: the Grafana dashboard JSON to a file or stdout, and clear errors for bad paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_operator.cli import main
from gpu_operator.config import load_config
from gpu_operator.render.monitoring import dashboard_json


def test_writes_the_default_stacks_dashboard_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "gpu.json"
    assert main(["dashboard", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == dashboard_json(load_config(None))
    assert json.loads(target.read_text(encoding="utf-8"))["uid"] == "gpu-operator-fleet"
    assert f"wrote the Grafana dashboard to {target}" in capsys.readouterr().err


def test_without_output_the_json_goes_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dashboard"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "GPU fleet"


def test_a_config_file_chooses_the_panels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("operator:\n  nodeStatusExporter:\n    enabled: true\n", encoding="utf-8")
    assert main(["dashboard", "-f", str(config)]) == 0
    assert "gpu_operator_node_driver_ready" in capsys.readouterr().out


@pytest.mark.parametrize("where", ["directory", "missing-parent"])
def test_a_bad_output_path_is_a_clear_error_and_writes_nothing(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path if where == "directory" else tmp_path / "missing" / "gpu.json"
    assert main(["dashboard", "-o", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {target}: ")
    assert "Traceback" not in captured.err and captured.out == ""
    assert list(tmp_path.iterdir()) == []
