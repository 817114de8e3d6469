"""A real Prometheus scrapes both exporters (run as processes on a simulated 8×H100 node) and answers queries.

Prometheus (Debian's `prometheus` package; `make test` installs it when it can) is started on 127.0.0.1 with
a temporary configuration scraping `gpu-operator-agent metrics-exporter` and `node-status-exporter` every
second; its HTTP API must then return the expected series with dcgm-exporter's and the validator's labels.
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
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="the `prometheus` binary is not installed (Debian package `prometheus`; `make test-tools` installs it)",
)

AGENT = [sys.executable, "-m", "gpu_operator.agents.cli"]
NODE = "prom-node-1"
DEADLINE_SECONDS = 20.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read()
    except (urllib.error.URLError, OSError):
        return None


def wait_for(condition: Callable[[], bool], what: str, deadline: float) -> None:
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_", "KUBERNETES_"))}
    env.pop("NODE_NAME", None)
    return env


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("prometheus")
    validations = work / "validations"
    validations.mkdir()
    (validations / "driver-ready").write_text("IS_HOST_DRIVER=true\n")
    (validations / "toolkit-ready").touch()
    exporter_port, status_port, prometheus_port = free_port(), free_port(), free_port()
    commands = [
        [*AGENT, "metrics-exporter", "--nvml", "fake:h100-8x", "--address", f"127.0.0.1:{exporter_port}",
         "--collect-interval", "500", "--node-name", NODE],
        [*AGENT, "node-status-exporter", "--nvml", "fake:h100-8x", "--address", f"127.0.0.1:{status_port}",
         "--node-name", NODE, "--output-dir", str(validations)],
    ]
    config = work / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        f"  - job_name: gpu-metrics\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
        f"  - job_name: node-status\n    static_configs:\n      - targets: ['127.0.0.1:{status_port}']\n"
    )
    assert PROMETHEUS is not None
    commands.append([
        PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}", "--log.level=warn",
    ])
    logs = [(work / f"process-{n}.log").open("w") for n in range(len(commands))]
    processes = [
        subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment(), cwd=work)
        for command, log in zip(commands, logs, strict=True)
    ]
    try:
        deadline = time.monotonic() + DEADLINE_SECONDS
        for port in (exporter_port, status_port):
            wait_for(lambda port=port: fetch(f"http://127.0.0.1:{port}/metrics") is not None,
                     f"the exporter on port {port}", deadline)
        wait_for(lambda: fetch(f"http://127.0.0.1:{prometheus_port}/-/ready") is not None, "Prometheus", deadline)
        yield f"http://127.0.0.1:{prometheus_port}"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        for log in logs:
            log.close()


def query(base: str, promql: str) -> list[dict[str, Any]]:
    raw = fetch(f"{base}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
    if raw is None:
        return []
    answer = json.loads(raw)
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


def eventually(base: str, promql: str, count: int) -> list[dict[str, Any]]:
    """The query's result once it has `count` series (polling until the deadline)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    result: list[dict[str, Any]] = []

    def ready() -> bool:
        nonlocal result
        result = query(base, promql)
        return len(result) == count

    wait_for(ready, f"{count} series of {promql} (last: {len(result)})", deadline)
    return result


def test_prometheus_scrapes_gpu_metrics(prometheus: str) -> None:
    series = eventually(prometheus, "DCGM_FI_DEV_GPU_TEMP", 8)
    labels = {s["metric"]["gpu"]: s["metric"] for s in series}
    assert labels["0"] == {
        "__name__": "DCGM_FI_DEV_GPU_TEMP",
        "instance": labels["0"]["instance"],
        "job": "gpu-metrics",
        "gpu": "0",
        "UUID": "GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9",
        "pci_bus_id": "00000000:18:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H100 80GB HBM3",
        "hostname": NODE,
        "DCGM_FI_DRIVER_VERSION": "570.124.06",
    }
    assert all(28 <= float(s["value"][1]) <= 42 for s in series)
    xid = eventually(prometheus, 'DCGM_FI_DEV_XID_ERRORS{err_msg="No Error"}', 8)
    assert {s["metric"]["err_code"] for s in xid} == {"0"}
    ratios = eventually(prometheus, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 8)
    assert all(0.0 <= float(s["value"][1]) <= 1.0 for s in ratios)
    assert query(prometheus, 'count(up{job="gpu-metrics"} == 1)')[0]["value"][1] == "1"


def test_prometheus_scrapes_the_node_status(prometheus: str) -> None:
    expected = {
        "gpu_operator_node_driver_ready": "1",
        "gpu_operator_node_toolkit_ready": "1",
        "gpu_operator_node_plugin_ready": "0",
        "gpu_operator_node_cuda_ready": "0",
        "gpu_operator_node_driver_validation": "1",
        "gpu_operator_nvidia_pci_devices_total": "8",
    }
    for name, value in expected.items():
        (series,) = eventually(prometheus, f'{name}{{node="{NODE}",job="node-status"}} == {value}', 1)
        assert series["metric"]["node"] == NODE
    (started,) = eventually(prometheus, "gpu_operator_node_metrics_ready_ts_seconds", 1)
    assert abs(float(started["value"][1]) - time.time()) < 600
