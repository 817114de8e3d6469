"""Detection latency of the GPU health monitor: an NVML XID event to its Node condition written on the API server.

A monitor runs on a simulated 8-GPU node (h100-8x) against the fake API server of the agent tests, with its
threads as in production. Each round injects one new XID (a code and GPU not seen before, so each must be
written) and times it until the `nodes/status` patch reaches the server. The baseline, from the same run, is the
bare write: the same client patching the same condition, with nothing before it. The condition bucket is opened
wide (a benchmark of detection, not of the rate limit) and the batch window is the monitor's default (20 ms).
Nothing here asserts a time: the numbers are printed and kept in the benchmark's extra_info.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from itertools import product
from typing import Any

import pytest

from gpu_operator.agents.health_monitor.conditions import status_patch
from gpu_operator.agents.health_monitor.settings import Settings
from gpu_operator.agents.kube import NODES, PatchType
from gpu_operator.agents.nvml.simulated import SimulatedLibrary
from tests.agents.health_monitor.conftest import NODE, PROFILE, SETTINGS, Harness, Running, node_object, wait_until
from tests.agents.kube.fake_apiserver import FakeApiServer

#: XIDs of quarantining classes: each code on each GPU is a new finding, so every round writes.
CODES = (48, 62, 64, 79, 74, 95, 119, 120)
ROUNDS = len(CODES) * len(PROFILE.gpus)
BENCH_SETTINGS: Settings = replace(SETTINGS, condition_qps=1000.0, condition_burst=1000, batch_seconds=0.02,
                                   health_interval=3600.0)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _status_patches(server: FakeApiServer) -> int:
    return len(server.requests_to("PATCH", f"/api/v1/nodes/{NODE}/status$"))


def _detection(server: FakeApiServer, library: SimulatedLibrary) -> list[float]:
    latencies = []
    with Running(Harness(server, library, BENCH_SETTINGS).monitor()):
        for code, gpu in product(CODES, range(len(PROFILE.gpus))):
            before = _status_patches(server)
            start = time.perf_counter()
            library.inject(f"xid {code} on GPU {gpu}")
            wait_until(lambda before=before: _status_patches(server) > before, f"XID {code} on GPU {gpu} written")
            latencies.append(time.perf_counter() - start)
    return latencies


def _bare_writes(server: FakeApiServer) -> list[float]:
    client = server.client()
    durations = []
    for index in range(ROUNDS):
        condition = {"type": "GPUResetRequired", "status": "True", "reason": "XID48", "message": f"bare {index}",
                     "lastHeartbeatTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z"}
        start = time.perf_counter()
        client.patch(NODES, NODE, status_patch([condition]), patch_type=PatchType.STRATEGIC, status=True)
        durations.append(time.perf_counter() - start)
    return durations


def test_xid_event_to_condition_write(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApiServer() as server:
        server.add(node_object())
        latencies = benchmark.pedantic(_detection, args=(server, SimulatedLibrary(PROFILE)), rounds=1, iterations=1)
    with FakeApiServer() as server:
        server.add(node_object())
        baseline = _bare_writes(server)
    numbers = {
        "detection_p50_ms": statistics.median(latencies) * 1e3,
        "detection_p99_ms": _percentile(latencies, 0.99) * 1e3,
        "detection_max_ms": max(latencies) * 1e3,
        "bare_write_p50_ms": statistics.median(baseline) * 1e3,
        "bare_write_p99_ms": _percentile(baseline, 0.99) * 1e3,
        "p50_over_bare_write": statistics.median(latencies) / statistics.median(baseline),
    }
    benchmark.extra_info.update(numbers, rounds=ROUNDS)
    with capsys.disabled():
        print("\n  " + ", ".join(f"{k}={v:.2f}" for k, v in numbers.items()))
    assert len(latencies) == ROUNDS == len(baseline)
