"""`gpu-operator-agent validator`: nvidia-validator's flags and env, exit statuses, status directory handling."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from unittest import mock

import pytest

from gpu_operator.agents import cli
from gpu_operator.agents.validator.command import main
from gpu_operator.agents.validator.settings import (
    Settings,
    SettingsError,
    resolve_settings,
)
from gpu_operator.agents.validator.status import StatusDir
from tests.agents.validator.helpers import Node, node_tree


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return node_tree(tmp_path)


def test_defaults_match_nvidia_validator() -> None:
    settings = resolve_settings({}, {})
    assert settings == Settings()
    assert (settings.with_wait, settings.with_workload, settings.cleanup_all) == (False, True, False)
    assert settings.output_dir == "/run/nvidia/validations"
    assert settings.sleep_interval_seconds == 5 and settings.mig_strategy == "single"
    assert settings.driver_install_dir == settings.driver_install_dir_ctr_path == "/run/nvidia/driver"
    assert settings.host_root == "/" and settings.nvml == "auto"


def test_flags_win_over_the_environment() -> None:
    environ = {
        "COMPONENT": "plugin",
        "WITH_WAIT": "1",
        "WITH_WORKLOAD": "false",
        "OPERATOR_NAMESPACE": "gpu-operator",
        "NODE_NAME": "n1",
        "MIG_STRATEGY": "mixed",
        "VALIDATOR_IMAGE_PULL_SECRETS": "ngc, mirror,",
        "SLEEP_INTERVAL_SECONDS": "2",
    }
    settings = resolve_settings({"component": "cuda", "with_wait": "false"}, environ)
    assert settings.component == "cuda" and settings.with_wait is False and settings.with_workload is False
    assert (settings.namespace, settings.node_name, settings.mig_strategy) == ("gpu-operator", "n1", "mixed")
    assert settings.validator_image_pull_secrets == ("ngc", "mirror") and settings.sleep_interval_seconds == 2


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"WITH_WAIT": "yes"}, "invalid value 'yes' for WITH_WAIT"),
        ({"MIG_STRATEGY": "all"}, "unknown MIG strategy 'all'"),
        ({"SLEEP_INTERVAL_SECONDS": "5s"}, "invalid value '5s' for SLEEP_INTERVAL_SECONDS"),
    ],
)
def test_invalid_values(environ: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        resolve_settings({}, environ)


def test_toolkit_from_the_environment(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    environ = {"COMPONENT": "toolkit", "GPU_OPERATOR_NVML": "fake:h200-8x", "OUTPUT_DIR": str(node.status)}
    assert main([], environ, paths=node.paths) == 0
    assert stat.S_IMODE((node.status / "toolkit-ready").stat().st_mode) == 0o644
    assert "toolkit validation is successful" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "invalid -c <component-name> flag: must not be empty string"),
        (["-c", "gpu"], "invalid -c <component-name> flag value: gpu"),
        (["-c", "metrics"], "served by `gpu-operator-agent node-status-exporter`"),
        (["-c", "vfio-pci"], "sandbox workload validation"),
        (
            ["-c", "plugin", "--ns", "gpu-operator"],
            "invalid -n <node-name> flag: must not be empty string for plugin validation",
        ),
        (["-c", "cuda", "-n", "n1"], "invalid -ns <namespace> flag: must not be empty string for cuda validation"),
        (["-c", "driver", "--skip-validation"], "skipping validation is not supported for component: driver"),
        (["-c", "toolkit", "--mig-strategy", "some"], "unknown MIG strategy"),
    ],
)
def test_refused_settings_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv, {}) == 2
    assert message in capsys.readouterr().err


def test_a_failed_check_exits_1_with_the_reason(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", "nvidia-fs", "-o", str(node.status)], {}, paths=node.paths) == 1
    assert "error validating nvidia-fs: kernel module nvidia_fs is not loaded" in capsys.readouterr().err


def test_skip_validation_only_writes_the_file(node: Node) -> None:
    environ = {"SKIP_VALIDATION": "true", "COMPONENT": "cuda", "OPERATOR_NAMESPACE": "gpu-operator"}
    assert main(["-o", str(node.status)], environ, paths=node.paths) == 0
    assert (node.status / "cuda-ready").exists()


def test_cleanup_all_starts_from_an_empty_directory(node: Node) -> None:
    node.status.mkdir()
    (node.status / "driver-ready").write_text("IS_HOST_DRIVER=true\n")
    argv = ["-c", "toolkit", "-r", "--nvml", "fake:t4-1x", "-o", str(node.status)]
    assert main(argv, {}, paths=node.paths) == 0
    assert sorted(p.name for p in node.status.iterdir()) == ["toolkit-ready"]


def test_cuda_and_plugin_without_a_cluster_say_so(node: Node, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-c", "cuda", "--ns", "gpu-operator", "-o", str(node.status)]
    assert main(argv, {"VALIDATOR_IMAGE": "v:1"}, paths=node.paths) == 1
    assert "error getting cluster config: not running in a cluster" in capsys.readouterr().err


def test_status_files_are_replaced_atomically(tmp_path: Path) -> None:
    status = StatusDir(tmp_path)
    status.write("driver-ready", "IS_HOST_DRIVER=false\n")
    with mock.patch("gpu_operator.agents.validator.status.os.replace", wraps=os.replace) as replace:
        status.write("driver-ready", "IS_HOST_DRIVER=true\n")
    source, target = replace.call_args.args
    assert Path(source).parent == tmp_path and Path(source).name.startswith(".driver-ready.")
    assert Path(target) == tmp_path / "driver-ready"
    assert status.read("driver-ready") == "IS_HOST_DRIVER=true\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["driver-ready"]


def test_the_agent_is_registered(node: Node) -> None:
    argv = ["validator", "-c", "toolkit", "--nvml", "fake:t4-1x", "-o", str(node.status)]
    assert cli.main(argv) == 0
    assert (node.status / "toolkit-ready").exists()
