"""The installed `gpu-operator` console script: bad input ends in a clear error, never a traceback; bugs in one line."""

from __future__ import annotations

import codecs
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_operator.cli
from gpu_operator.cli import main
from tests.cli.support import CONSOLE_SCRIPT, create_files, snapshot
from tests.cli.test_bad_inputs import BOMB
from tests.conftest import ROOT


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    assert CONSOLE_SCRIPT.exists(), f"{CONSOLE_SCRIPT} is missing: install the package (pip install -e .)"
    environment = {key: value for key, value in os.environ.items() if key != gpu_operator.cli.TRACEBACK_VARIABLE}
    return subprocess.run([str(CONSOLE_SCRIPT), *argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=environment, check=False)


@pytest.mark.parametrize(("files", "argv", "expected"), [
    pytest.param({"configs/": ""}, ["render", "-f", "configs"], "configs: is a directory", id="-f directory"),
    pytest.param({}, ["render", "-f", "nope.yaml"], "nope.yaml: no such file", id="-f missing"),
    pytest.param({"c.yaml": "caf\xe9: 1\n".encode("latin-1")}, ["render", "-f", "c.yaml"], "is not UTF-8 text",
                 id="non-UTF-8"),
    pytest.param({"c.yaml": codecs.BOM_UTF16_LE + "a: 1\n".encode("utf-16-le")}, ["import-values", "c.yaml"],
                 "is UTF-16 text", id="import UTF-16"),
    pytest.param({"c.yaml": "operator: " + "[" * 2000 + "]" * 2000 + "\n"}, ["render", "-f", "c.yaml"],
                 "nested deeper than 100 levels", id="deep nesting"),
    pytest.param({"c.yaml": BOMB}, ["render", "-f", "c.yaml", "-o", "out"], "a YAML alias bomb?", id="alias bomb"),
    pytest.param({"c.yaml": "a: 1\na: 2\n"}, ["import-values", "c.yaml"], "a: duplicate key (lines 1 and 2)",
                 id="duplicate key"),
    pytest.param({"out": "x"}, ["render", "-o", "out"], "out: is a file, not a directory", id="-o file"),
    pytest.param({}, ["render", "--bogus"], "unrecognized arguments: --bogus", id="unknown flag"),
])
def test_the_console_script_reports_bad_input_without_a_traceback(
    files: dict[str, str | bytes], argv: list[str], expected: str, tmp_path: Path
) -> None:
    create_files(tmp_path, files)
    before = snapshot(tmp_path)
    result = run(argv, tmp_path)
    assert expected in result.stderr
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert snapshot(tmp_path) == before


def test_the_console_script_renders_a_stack_file(tmp_path: Path) -> None:
    result = run(["render", "-f", str(ROOT / "stacks" / "Pulumi.prod.yaml"), "--summary"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "h100train" in result.stdout


class _ClosedPipe(io.StringIO):
    """stdout whose reader went away, as after `gpu-operator render | head`."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_quietly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["render"]) == gpu_operator.cli.EXIT_PIPE_CLOSED
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error" not in err


class _FullDisk(io.StringIO):
    """stdout redirected to a full disk (`> /dev/full`)."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_full_disk_on_stdout_is_reported_not_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _FullDisk())
    assert main(["render"]) == 2
    err = capsys.readouterr().err
    assert "error: standard output: cannot be written: No space left on device" in err
    assert "internal error" not in err


def test_a_bug_is_reported_in_one_line_with_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object, out: object) -> int:
        raise KeyError("spec")

    monkeypatch.delenv(gpu_operator.cli.TRACEBACK_VARIABLE, raising=False)
    monkeypatch.setitem(gpu_operator.cli._COMMANDS, "render", broken)
    assert main(["render"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: internal error (KeyError: 'spec'); this is a bug in gpu-operator")
    assert "please report it" in err and "GPU_OPERATOR_TRACEBACK=1 shows the traceback" in err
    assert err.count("\n") == 1


def test_the_traceback_variable_shows_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: object, out: object) -> int:
        raise KeyError("spec")

    monkeypatch.setenv(gpu_operator.cli.TRACEBACK_VARIABLE, "1")
    monkeypatch.setitem(gpu_operator.cli._COMMANDS, "render", broken)
    with pytest.raises(KeyError):
        main(["render"])


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--help"]) == 0
    assert "Pulumi stack file" in capsys.readouterr().out
