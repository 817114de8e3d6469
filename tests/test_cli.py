"""The `gpu-operator` command line: render to stdout and to a directory, summary, import-values, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.cli import main
from gpu_operator.config import load_config, parse_config
from gpu_operator.render import render
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects
from tests.support.reference import reference_file


def test_render_default_to_stdout_is_the_rendered_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render"]) == 0
    documents = list(yaml.safe_load_all(capsys.readouterr().out))
    config = load_config(None)
    assert documents == [*network_objects(config), *render(config), *monitoring_objects(config)]


def test_render_to_directory_writes_one_file_per_object_in_order(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    (out).mkdir()
    (out / "9999-configmap-stale.yaml").write_text("stale")
    (out / "keep-me.txt").write_text("user file")
    assert main(["render", "-f", "examples/configs/time-slicing.yaml", "-o", str(out)]) == 0
    files = sorted(p.name for p in out.glob("*.yaml"))
    objects = render(load_config("examples/configs/time-slicing.yaml"))
    assert len(files) == len(objects)
    assert files[0] == "0001-namespace-gpu-operator.yaml"
    assert [yaml.safe_load((out / f).read_text()) for f in files] == objects
    assert (out / "keep-me.txt").exists()


def test_summary_table_lists_operands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["render", "-o", str(tmp_path), "--summary"]) == 0
    output = capsys.readouterr().out
    assert "STATE" in output and "state-driver" in output and "nvidia-driver-daemonset" in output
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04" in output
    assert "network-operator 26.4.1" in output
    assert "NicClusterPolicy nic-cluster-policy: DOCA-OFED driver container doca-driver:" in output
    assert "RDMA resources rdma/ib (sriov)" in output and "DMA-BUF (kernel modules: open)" in output


def test_bad_config_lists_problems_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("operator:\n  mig:\n    strategy: maybe\n  devicePlugin:\n    enabledd: true\n")
    assert main(["render", "-f", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "operator.mig.strategy" in err and "operator.devicePlugin.enabledd" in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", "no/such/config.yaml"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_import_values_prints_a_valid_config(capsys: pytest.CaptureFixture[str]) -> None:
    values = reference_file("helm-values/aks-rdma-infiniband/gpu-operator-values.yaml")
    assert main(["import-values", str(values)]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    config = parse_config(document)
    assert config.operator.driver.rdma.enabled is True
    assert config.nfd.enabled is False
