"""The metrics exporter's resident memory with pod attribution on, and what each choice of import costs.

Each variant is a fresh exporter process (`tests/bench/exporter_memory_probe.py`) on the simulated 8×H100 node,
run as the operator runs it (`--kubernetes`), asking a fake kubelet's pod-resources service (grpcio's server, in
this process, on a unix socket in a temporary directory) on every collection; 200 scrapes are made over about
twenty collections, then the process's VmRSS is read. All variants are measured in the same run:

* `grpcio`: the client the exporter had before (grpcio channel, generated stubs, protobuf messages): the baseline;
* `h2-protobuf`: the HTTP/2 call the exporter ships, answers read by protobuf (what protobuf alone costs);
* `shipped`: the exporter as it is (HTTP/2 call over h2, answers read from the wire format);
* `no-attribution`: the shipped exporter without `--kubernetes` (the floor attribution adds to).

A second test reads the import footprint of a fresh interpreter loading only the exporter (no simulated NVML, as
on a real node) with each client's modules, and with `http.server`, which the exposition server was built on before
it read requests itself (`http.server` loads `http.client`, `email` and `ssl`). dcgm-exporter's resident memory as
users report it on 8-GPU nodes is
printed beside them. Memory is reported, not timed; the one assertion is the ordering the change relies on.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_operator.agents.nvml.simulated import load_profile
from tests.agents.kubelet.fake_kubelet import FakeKubelet, container, fake_kubelet, pod

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "h100-8x"
SCRAPES = 200
#: Milliseconds between collections: 200 scrapes 10 ms apart span about twenty List calls.
INTERVAL_MS = 100
SCRAPE_GAP_S = 0.01
#: dcgm-exporter's resident memory on 8-GPU nodes as users report it (MiB; 50-75 of it native libdcgm).
DCGM_EXPORTER_REPORTED_RSS_MIB = 480.0
VARIANTS = ("grpcio", "h2-protobuf", "shipped", "no-attribution")


def _report(benchmark: Any, capsys: pytest.CaptureFixture[str], **numbers: float) -> None:
    benchmark.extra_info.update(numbers)
    with capsys.disabled():
        print("\n  " + ", ".join(f"{k}={v:.1f}" for k, v in numbers.items()))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(ln for ln in status if ln.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _get(connection: http.client.HTTPConnection) -> bytes:
    connection.request("GET", "/metrics")
    return connection.getresponse().read()


@pytest.fixture(scope="module")
def kubelet() -> Iterator[FakeKubelet]:
    """A kubelet whose pod holds GPU 0, so every collection labels a series with the pod."""
    trainer = pod("trainer-0", "ml", container("main", ("nvidia.com/gpu", [load_profile(PROFILE).gpus[0].uuid])))
    with fake_kubelet([trainer]) as fake:
        yield fake


def _rss_after_scrapes(variant: str, kubelet: FakeKubelet) -> tuple[float, int]:
    """The variant's RSS (MiB) after SCRAPES scrapes, and how many List calls the kubelet answered meanwhile."""
    port = _free_port()
    client = "shipped" if variant == "no-attribution" else variant
    flags = ["--nvml", f"fake:{PROFILE}", "--address", f"127.0.0.1:{port}", "--collect-interval", str(INTERVAL_MS)]
    if variant != "no-attribution":
        flags += ["--kubernetes", "--pod-resources-kubelet-socket", kubelet.socket_path]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_"))}
    process = subprocess.Popen([sys.executable, "-m", "tests.bench.exporter_memory_probe", client, *flags],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready = b'pod="trainer-0"' if variant != "no-attribution" else b"DCGM_FI_DEV_GPU_TEMP"
        deadline = time.monotonic() + 60
        body = b""
        while ready not in body:
            assert process.poll() is None, f"the {variant} exporter exited with status {process.returncode}"
            assert time.monotonic() < deadline, f"the {variant} exporter did not serve its metrics"
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                body = _get(connection)
            except OSError:
                time.sleep(0.1)
        calls = kubelet.calls
        for _ in range(SCRAPES):
            _get(connection)
            time.sleep(SCRAPE_GAP_S)
        connection.close()
        return _rss_mib(process.pid), kubelet.calls - calls
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_exporter_rss_after_200_scrapes_with_pod_attribution(
    benchmark: Any, capsys: pytest.CaptureFixture[str], kubelet: FakeKubelet
) -> None:
    measured: dict[str, float] = {}
    calls: dict[str, int] = {}

    def run() -> None:
        for variant in VARIANTS:
            measured[variant], calls[variant] = _rss_after_scrapes(variant, kubelet)

    benchmark.pedantic(run, rounds=1, iterations=1)
    _report(
        benchmark, capsys,
        **{f"rss_{v.replace('-', '_')}_mib": measured[v] for v in VARIANTS},
        saved_vs_grpcio_mib=measured["grpcio"] - measured["shipped"],
        attribution_cost_mib=measured["shipped"] - measured["no-attribution"],
        dcgm_exporter_reported_rss_mib=DCGM_EXPORTER_REPORTED_RSS_MIB,
    )
    assert all(calls[v] > 0 for v in VARIANTS if v != "no-attribution"), calls
    assert measured["shipped"] < measured["h2-protobuf"] < measured["grpcio"], measured


_RSS = "import re, {modules}\nprint(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"

#: What a real node's exporter process imports with each client (no simulated NVML).
IMPORT_SETS = {
    "exporter_shipped": "gpu_operator.agents.metrics_exporter.command",
    "exporter_with_protobuf": "gpu_operator.agents.metrics_exporter.command, "
                              "gpu_operator.agents.kubelet.podresources_pb2",
    "exporter_with_grpcio_and_protobuf": "gpu_operator.agents.metrics_exporter.command, grpc, "
                                         "gpu_operator.agents.kubelet.podresources_pb2_grpc",
    # the exposition server as it was, on http.server (which loads http.client, email and ssl)
    "exporter_with_http_server": "http.server, gpu_operator.agents.metrics_exporter.command",
    "interpreter": "sys",
}


def test_exporter_import_footprint_by_client(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    def rss(modules: str) -> float:
        out = subprocess.run([sys.executable, "-c", _RSS.format(modules=modules)], capture_output=True, text=True,
                             check=True, timeout=60, cwd=ROOT).stdout
        return int(out) / 1024

    found: dict[str, float] = {}

    def run() -> None:
        for name, modules in IMPORT_SETS.items():
            found[name] = rss(modules)

    benchmark.pedantic(run, rounds=1, iterations=1)
    _report(benchmark, capsys, **{f"import_rss_{k}_mib": v for k, v in found.items()})
    assert found["exporter_shipped"] < found["exporter_with_http_server"] < found["exporter_with_grpcio_and_protobuf"]
