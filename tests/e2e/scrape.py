"""Running the node status exporter against the API server and reading one gauge from its /metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.agents import AGENT
from tests.e2e.control_plane import ControlPlane, free_port

__all__ = ["run_exporter_until"]


def _gauge(url: str, metric: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == metric:
                return float(sample.value)
    return None


def run_exporter_until(
    plane: ControlPlane, env: Mapping[str, str], token: str, workdir: Path, *, metric: str, want: float,
    timeout: float = 60.0,
) -> tuple[float | None, str]:
    """Start the exporter on a free loopback port, scrape until `metric` equals `want` (or time runs out), stop it."""
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = plane.write_kubeconfig(workdir / "kubeconfig", token)
    port = free_port()
    log = workdir / "node-status-exporter.log"
    process_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "PYTHONUNBUFFERED": "1",
                   **env, "KUBECONFIG": str(kubeconfig)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(AGENT), "node-status-exporter", f"--address=127.0.0.1:{port}", f"--host-root={workdir}"],
            env=process_env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    value = None
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            value = _gauge(f"http://127.0.0.1:{port}/metrics", metric)
            if value == want:
                break
            time.sleep(0.5)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
    return value, log.read_text(errors="replace")
