"""A real Prometheus evaluates the rendered rules on our metrics exporter: an injected XID fires, then resolves.

Debian's `prometheus` (installed by `make test-tools`) runs on 127.0.0.1 with the rendered PrometheusRule's groups
as its rule file, scraping `gpu-operator-agent metrics-exporter` on a simulated 8×H100 node whose profile delivers
XID 79 on GPU 2. `GpuXidHardwareError` must go `firing` in Prometheus's own `/api/v1/alerts`; when the exporter is
replaced by one on a healthy node, the alert must leave that list. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.config import parse_config
from gpu_operator.render.monitoring import render_prometheus_rule

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="the `prometheus` binary is not installed (Debian package `prometheus`; `make test-tools` installs it)",
)

AGENT = [sys.executable, "-m", "gpu_operator.agents.cli"]
NODE = "alert-node-1"
DEADLINE_SECONDS = 45.0
FAULTY = "extends: h100-8x\nfaults:\n  xids:\n    - {gpu: 2, xid: 79}\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fetch(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read()
    except (urllib.error.URLError, OSError):
        return None


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_", "KUBERNETES_"))}
    env.pop("NODE_NAME", None)
    return env


class _Processes:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.running: list[subprocess.Popen[bytes]] = []

    def start(self, command: list[str], log: str) -> subprocess.Popen[bytes]:
        with (self.work / log).open("w") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=_environment(),
                                       cwd=self.work)
        self.running.append(process)
        return process

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        self.running.remove(process)


@pytest.fixture()
def processes(tmp_path: Path) -> Iterator[_Processes]:
    started = _Processes(tmp_path)
    try:
        yield started
    finally:
        for process in list(started.running):
            started.stop(process)


def _exporter(processes: _Processes, profile: str, port: int, log: str) -> subprocess.Popen[bytes]:
    process = processes.start(
        [*AGENT, "metrics-exporter", "--nvml", f"fake:{profile}", "--address", f"127.0.0.1:{port}",
         "--collect-interval", "500", "--node-name", NODE],
        log,
    )
    _wait_for(lambda: _fetch(f"http://127.0.0.1:{port}/metrics") is not None, f"the exporter on port {port}")
    return process


def _alerts(base: str, name: str) -> list[dict[str, Any]]:
    raw = _fetch(f"{base}/api/v1/alerts")
    if raw is None:
        return []
    answer = json.loads(raw)
    assert answer["status"] == "success", answer
    return [alert for alert in answer["data"]["alerts"] if alert["labels"]["alertname"] == name]


def test_an_injected_xid_fires_in_prometheus_and_resolves_when_it_clears(
    tmp_path: Path, processes: _Processes
) -> None:
    rule = render_prometheus_rule(parse_config({"cluster": {"prometheusOperator": True}}))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    (tmp_path / "faulty.yaml").write_text(FAULTY, encoding="utf-8")
    exporter_port, prometheus_port = _free_port(), _free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        "rule_files: [rules.yaml]\n"
        "scrape_configs:\n"
        f"  - job_name: nvidia-dcgm-exporter\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n",
        encoding="utf-8",
    )
    faulty = _exporter(processes, str(tmp_path / "faulty.yaml"), exporter_port, "faulty.log")
    assert PROMETHEUS is not None
    processes.start(
        [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{prometheus_port}", "--log.level=warn"],
        "prometheus.log",
    )
    base = f"http://127.0.0.1:{prometheus_port}"
    _wait_for(lambda: _fetch(f"{base}/-/ready") is not None, "Prometheus")

    _wait_for(lambda: any(a["state"] == "firing" for a in _alerts(base, "GpuXidHardwareError")),
              "GpuXidHardwareError to fire")
    [alert] = _alerts(base, "GpuXidHardwareError")
    assert alert["labels"] == {"alertname": "GpuXidHardwareError", "severity": "critical", "hostname": NODE,
                               "gpu": "2", "UUID": alert["labels"]["UUID"], "err_code": "79"}
    assert alert["annotations"]["summary"] == f"GPU 2 on {NODE} reported hardware XID 79"
    assert not _alerts(base, "GpuXidApplicationError")

    processes.stop(faulty)
    _exporter(processes, "h100-8x", exporter_port, "healthy.log")
    _wait_for(lambda: not _alerts(base, "GpuXidHardwareError"), "GpuXidHardwareError to resolve")
