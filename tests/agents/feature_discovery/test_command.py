"""`gpu-operator-agent feature-discovery` as a real process: stdout output, real SIGHUP and SIGTERM, exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.agents.feature_discovery.test_labels_per_profile import H100

ROOT = Path(__file__).resolve().parents[3]
AGENT = [sys.executable, "-m", "gpu_operator.agents.cli", "feature-discovery"]


def environment(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GFD_", "GPU_OPERATOR_"))}
    for key in ("MIG_STRATEGY", "CONFIG_FILE", "USE_NODE_FEATURE_API", "FAIL_ON_INIT_ERROR", "NODE_NAME"):
        env.pop(key, None)
    env.update(extra)
    return env


def parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def file_says(path: Path, key: str, value: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return parse(path.read_text()).get(key) == value
        except (OSError, ValueError):
            return False

    return check


def test_oneshot_to_stdout(tmp_path: Path) -> None:
    machine = tmp_path / "product_name"
    machine.write_text("PowerEdge XE9680\n")
    result = subprocess.run(
        [
            *AGENT,
            "--nvml",
            "fake:h100-8x",
            "--oneshot",
            "--output-file",
            "",
            "--use-node-feature-api=false",
            "--machine-type-file",
            str(machine),
        ],
        cwd=ROOT,
        env=environment(GFD_NO_TIMESTAMP="true"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    expected = {key: value for key, value in H100.items() if key != "nvidia.com/gfd.timestamp"}
    assert parse(result.stdout) == expected
    assert result.stdout.splitlines() == sorted(result.stdout.splitlines())


def test_nvml_missing_is_one_line_and_status_1(tmp_path: Path) -> None:
    faulty = tmp_path / "no-driver.yaml"
    faulty.write_text("extends: t4-1x\nfaults: {init: DRIVER_NOT_LOADED}\n")
    result = subprocess.run(
        [*AGENT, "--oneshot", "-o", ""],
        cwd=ROOT,
        env=environment(GPU_OPERATOR_NVML=f"fake:{faulty}", USE_NODE_FEATURE_API="false"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        result.stderr.splitlines()[-1]
        == "gpu-operator-agent feature-discovery: NVML is not available: Driver Not Loaded"
    )


def test_sighup_reloads_and_sigterm_withdraws(tmp_path: Path) -> None:
    output = tmp_path / "features.d" / "gfd"
    config = tmp_path / "config.yaml"
    config.write_text("version: v1\n")
    env = environment(
        GPU_OPERATOR_NVML="fake:t4-1x",
        GFD_OUTPUT_FILE=str(output),
        GFD_SLEEP_INTERVAL="1h",
        GFD_MACHINE_TYPE_FILE=str(tmp_path / "missing"),
        GFD_USE_NODE_FEATURE_API="false",
        CONFIG_FILE=str(config),
    )
    process = subprocess.Popen(AGENT, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(file_says(output, "nvidia.com/gpu.product", "Tesla-T4"), "the first labels")
        assert parse(output.read_text())["nvidia.com/gpu.machine"] == "unknown"
        config.write_text("sharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 8}]\n")
        process.send_signal(signal.SIGHUP)
        wait_for(file_says(output, "nvidia.com/gpu.product", "Tesla-T4-SHARED"), "labels from the new config")
        assert parse(output.read_text())["nvidia.com/gpu.replicas"] == "8"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not output.exists()
    assert not (output.parent / "gfd-tmp").exists()
