"""The agents' Kubernetes client (lightkube behind `gpu_operator.agents.kube`): an agent process's resident memory
after importing it and after 1,000 requests, beside the figures of the hand-written client it replaced.

The stand-in agent (`tests/bench/kube_memory_probe.py`) runs in a fresh interpreter against the fake API server of
the agent tests, which runs here, so only the client's process is measured. Nothing here asserts memory or
timings: the numbers are printed and kept in the benchmark's extra_info.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.kube.fake_apiserver import FakeApiServer

REPO = Path(__file__).resolve().parents[2]
REQUESTS = 1000
MIB = 1024.0

#: The hand-written stdlib client (commit 8c81160, measured with the same probe, median of 3 runs, on the machine
#: the lightkube figures were first taken on): MiB after import, after the first request, after 1,000 more, and
#: milliseconds per request against the fake server.
HAND_WRITTEN_CLIENT = {"import_mib": 23.9, "first_request_mib": 24.1, "after_1000_requests_mib": 24.1,
                       "ms_per_request": 0.31}


def report(benchmark: Any, capsys: pytest.CaptureFixture[str], **numbers: float) -> None:
    benchmark.extra_info.update(numbers)
    with capsys.disabled():
        print("\n  " + ", ".join(f"{k}={v:.3f}" for k, v in numbers.items()))


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}}})
        for index in range(20):
            server.add({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1"},
                        "metadata": {"name": f"p{index}", "namespace": "gpu-operator"}})
        yield server.kubeconfig(tmp_path_factory.mktemp("kube"))


def _probe(kubeconfig: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "tests.bench.kube_memory_probe", str(kubeconfig), str(REQUESTS)],
                         capture_output=True, text=True, check=True, timeout=120, cwd=REPO).stdout
    return json.loads(out)


def test_resident_memory_of_an_agent_using_the_kubernetes_client(
    benchmark: Any, capsys: pytest.CaptureFixture[str], kubeconfig: Path
) -> None:
    found = benchmark.pedantic(_probe, args=(kubeconfig,), rounds=1, iterations=1)
    imported, after = found["import_kib"] / MIB, found["after_requests_kib"] / MIB
    report(
        benchmark,
        capsys,
        rss_start_mib=found["start_kib"] / MIB,
        rss_after_import_mib=imported,
        rss_after_first_request_mib=found["first_request_kib"] / MIB,
        rss_after_1000_requests_mib=after,
        rss_growth_over_requests_mib=after - found["first_request_kib"] / MIB,
        ms_per_request=found["seconds"] / REQUESTS * 1e3,
        hand_written_import_mib=HAND_WRITTEN_CLIENT["import_mib"],
        hand_written_after_1000_requests_mib=HAND_WRITTEN_CLIENT["after_1000_requests_mib"],
        hand_written_ms_per_request=HAND_WRITTEN_CLIENT["ms_per_request"],
        import_delta_mib=imported - HAND_WRITTEN_CLIENT["import_mib"],
        after_1000_requests_delta_mib=after - HAND_WRITTEN_CLIENT["after_1000_requests_mib"],
    )
    assert found["requests"] == REQUESTS and after > 0
