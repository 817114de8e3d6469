"""Running an exporter agent against the API server and reading its /metrics until a condition holds."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.e2e.agents import AGENT
from tests.e2e.control_plane import ControlPlane, free_port, stop_process_group

__all__ = ["run_exporter_until", "run_metrics_exporter_until"]


def _samples(url: str) -> list[Sample]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return []
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def _gauge(url: str, metric: str) -> float | None:
    return next((float(sample.value) for sample in _samples(url) if sample.name == metric), None)


def _start(
    plane: ControlPlane, agent: str, args: list[str], env: Mapping[str, str], token: str, workdir: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = plane.write_kubeconfig(workdir / "kubeconfig", token)
    log = workdir / f"{agent}.log"
    process_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1",
                   **env, "KUBECONFIG": str(kubeconfig)}
    with log.open("wb") as out:
        process = subprocess.Popen([str(AGENT), agent, *args], env=process_env, cwd=workdir, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    return process, log


def run_metrics_exporter_until(
    plane: ControlPlane, env: Mapping[str, str], token: str, workdir: Path, *,
    found: Callable[[list[Sample]], bool], timeout: float = 60.0,
) -> tuple[list[Sample], str]:
    """Start the metrics exporter on a free loopback port, scrape until `found(samples)` holds (or time runs out)."""
    port = free_port()
    process, log = _start(plane, "metrics-exporter", [], {**env, "DCGM_EXPORTER_LISTEN": f"127.0.0.1:{port}"},
                          token, workdir)
    samples: list[Sample] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            samples = _samples(f"http://127.0.0.1:{port}/metrics")
            if samples and found(samples):
                break
            time.sleep(0.5)
    finally:
        stop_process_group(process)
    return samples, log.read_text(errors="replace")


def run_exporter_until(
    plane: ControlPlane, env: Mapping[str, str], token: str, workdir: Path, *, metric: str, want: float,
    timeout: float = 60.0,
) -> tuple[float | None, str]:
    """Start the node status exporter on a free loopback port, scrape until `metric` equals `want`, stop it."""
    port = free_port()
    process, log = _start(plane, "node-status-exporter", [f"--address=127.0.0.1:{port}", f"--host-root={workdir}"],
                          env, token, workdir)
    value = None
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            value = _gauge(f"http://127.0.0.1:{port}/metrics", metric)
            if value == want:
                break
            time.sleep(0.5)
    finally:
        stop_process_group(process)
    return value, log.read_text(errors="replace")
