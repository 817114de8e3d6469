"""The `gpu` marker's switch, run for real: pytest in a subprocess on a tiny test file, on a machine that the
hooks are told has, or has not, a GPU (so those outcomes do not depend on the machine running this suite); and
`GPU_REQUIRED=1 pytest -m gpu` on the suite's own real-NVML tests, which must fail here exactly when this machine
shows no GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.agents.gpu_machine import find_gpu_evidence

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """\
import tests.agents.gpu_gate as gate
from tests.agents.gpu_gate import pytest_configure, pytest_runtest_makereport, pytest_runtest_setup
from tests.agents.gpu_machine import GpuEvidence

gate.machine_evidence = lambda: GpuEvidence({nodes!r}, ())
"""

GPU_TESTS = """\
import pytest

pytestmark = pytest.mark.gpu


def test_our_loader_raises():
    raise RuntimeError("libnvidia-ml.so.1 could not be loaded")


def test_works():
    pass


def test_skips_itself():
    pytest.skip("nvidia-smi is not installed")


@pytest.mark.xfail(reason="a known driver bug", strict=True)
def test_expected_failure():
    raise AssertionError
"""

OTHER_TESTS = """\
def test_not_about_gpus():
    pass
"""


@dataclass(frozen=True)
class Run:
    returncode: int
    outcomes: dict[str, str]
    messages: dict[str, str]
    output: str


def _run(tmp_path: Path, *, gpu: bool, required: str | None) -> Run:
    (tmp_path / "conftest.py").write_text(CONFTEST.format(nodes=("/dev/nvidia0",) if gpu else ()))
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\nmarkers =\n    gpu: real GPU\n")
    (tmp_path / "test_real_driver.py").write_text(GPU_TESTS)
    (tmp_path / "test_other.py").write_text(OTHER_TESTS)
    env = {k: v for k, v in os.environ.items() if k not in ("GPU_REQUIRED", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if required is not None:
        env["GPU_REQUIRED"] = required
    report = tmp_path / "report.xml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-q",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    if report.exists():
        for case in ElementTree.parse(report).iter("testcase"):
            name = case.get("name", "")
            outcome = next(
                (child for child in case if child.tag in ("failure", "error", "skipped")),
                None,
            )
            outcomes[name] = "passed" if outcome is None else outcome.tag
            messages[name] = "" if outcome is None else f"{outcome.get('message', '')} {outcome.text or ''}"
    return Run(result.returncode, outcomes, messages, result.stdout + result.stderr)


def test_without_a_gpu_gpu_tests_skip_and_say_why(tmp_path: Path) -> None:
    run = _run(tmp_path, gpu=False, required=None)
    assert run.returncode == 0, run.output
    assert run.outcomes == {
        "test_our_loader_raises": "skipped",
        "test_works": "skipped",
        "test_skips_itself": "skipped",
        "test_expected_failure": "skipped",
        "test_not_about_gpus": "passed",
    }
    assert "no NVIDIA GPU on this machine (no /dev/nvidia<N> device node" in run.messages["test_works"]
    assert "GPU_REQUIRED=1 makes this a failure" in run.messages["test_works"]


@pytest.mark.parametrize("required", ["0", ""])
def test_gpu_required_off_is_the_same_as_unset(tmp_path: Path, required: str) -> None:
    run = _run(tmp_path, gpu=False, required=required)
    assert run.returncode == 0 and set(run.outcomes.values()) == {
        "skipped",
        "passed",
    }, run.output


def test_gpu_required_on_a_machine_without_a_gpu_fails(tmp_path: Path) -> None:
    run = _run(tmp_path, gpu=False, required="1")
    assert run.returncode == 1, run.output
    assert run.outcomes == {
        "test_our_loader_raises": "error",
        "test_works": "error",
        "test_skips_itself": "error",
        "test_expected_failure": "error",
        "test_not_about_gpus": "passed",
    }
    assert "GPU_REQUIRED=1 but this machine has no NVIDIA GPU" in run.messages["test_works"]


def test_on_a_gpu_machine_an_exception_from_our_code_is_a_failure(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, gpu=True, required=None)
    assert run.returncode == 1, run.output
    assert run.outcomes == {
        "test_our_loader_raises": "failure",
        "test_works": "passed",
        "test_skips_itself": "skipped",
        "test_expected_failure": "skipped",  # junit's spelling of xfailed
        "test_not_about_gpus": "passed",
    }
    assert "libnvidia-ml.so.1 could not be loaded" in run.messages["test_our_loader_raises"]


def test_gpu_required_on_a_gpu_machine_turns_any_skip_into_a_failure(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, gpu=True, required="1")
    assert run.returncode == 1, run.output
    assert run.outcomes["test_skips_itself"] == "failure"
    assert "GPU_REQUIRED=1: a gpu test may not skip, and this one did" in run.messages["test_skips_itself"]
    assert "nvidia-smi is not installed" in run.messages["test_skips_itself"]
    assert run.outcomes["test_works"] == "passed"
    # an expected failure is not a skip: it stays expected
    assert run.outcomes["test_expected_failure"] == "skipped"
    assert "xfail" in run.output or "xfailed" in run.output


def test_a_gpu_required_value_that_means_neither_stops_the_run(tmp_path: Path) -> None:
    run = _run(tmp_path, gpu=True, required="maybe")
    assert run.returncode == 4, run.output
    assert "GPU_REQUIRED='maybe' is neither on nor off" in run.output


def test_gpu_required_on_this_machine_runs_the_real_nvml_tests_or_fails() -> None:
    """The real thing: `GPU_REQUIRED=1 pytest -m gpu` on the suite's own real-NVML tests, on this machine."""
    env = {k: v for k, v in os.environ.items() if k not in ("GPU_REQUIRED", "PYTEST_ADDOPTS")}
    env["GPU_REQUIRED"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "gpu", "tests/agents/test_gpu_nvml.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert "skipped" not in output.splitlines()[-1], output
    if find_gpu_evidence().present:
        assert result.returncode == 0, output
    else:
        assert result.returncode == 1, output
        assert "GPU_REQUIRED=1 but this machine has no NVIDIA GPU" in output
