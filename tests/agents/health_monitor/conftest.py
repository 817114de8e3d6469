"""A health monitor on a simulated 8-GPU node against the fake API server, driven pass by pass or running."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from gpu_operator.agents.health_monitor.host_actions import SimulatedHost
from gpu_operator.agents.health_monitor.monitor import HealthMonitor
from gpu_operator.agents.health_monitor.settings import Settings
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = "gpu-node-1"
BOOT = "boot-1"
PROFILE = load_profile("h100-8x")
UUIDS = [gpu.uuid for gpu in PROFILE.gpus]
#: NVML's bus id in the form sysfs names it, as conditions name a GPU.
PCI = [gpu.bus_id.lower()[4:] for gpu in PROFILE.gpus]
SETTINGS = Settings(node=NODE, nvml="fake:h100-8x", validations_dir="", startup_grace=0.0, health_interval=0.05,
                    batch_seconds=0.0, idle_poll=0.01)

Object = dict[str, Any]


def node_object(boot: str = BOOT, **extra: Any) -> Object:
    node: Object = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {}, "annotations": {}},
        "status": {"nodeInfo": {"bootID": boot},
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }
    for key, value in extra.items():
        node[key].update(value)
    return node


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """Poll until `predicate()` is truthy; fail naming `what` after `timeout` (a bound, never an assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def conditions(server: FakeApiServer) -> dict[str, Object]:
    node = server.get("nodes", NODE)
    assert node is not None
    return {c["type"]: c for c in node["status"].get("conditions", [])}


def annotations(server: FakeApiServer) -> dict[str, str]:
    node = server.get("nodes", NODE)
    assert node is not None
    return node["metadata"].get("annotations") or {}


def status_writes(server: FakeApiServer) -> list[Any]:
    return [r.body for r in server.requests_to("PATCH", f"/api/v1/nodes/{NODE}/status$")]


def set_annotation(server: FakeApiServer, key: str, value: str) -> None:
    server.update("nodes", NODE, None, lambda node: node["metadata"].setdefault("annotations", {}).update({key: value}))


def set_labels(server: FakeApiServer, labels: dict[str, str]) -> None:
    server.update("nodes", NODE, None, lambda node: node["metadata"].setdefault("labels", {}).update(labels))


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add(node_object())
        yield running


@pytest.fixture
def library() -> SimulatedLibrary:
    return SimulatedLibrary(PROFILE)


@dataclass
class Harness:
    """Builds monitors over one simulated library (NVML opened again reopens the same node)."""

    server: FakeApiServer
    library: SimulatedLibrary
    settings: Settings = SETTINGS

    def monitor(self, **changes: Any) -> HealthMonitor:
        settings = replace(self.settings, **changes)
        client = self.server.client()
        library = self.library
        return HealthMonitor(settings, client, lambda: LibraryNvml.open(library, SimulatedPciBus(PROFILE)),
                             lambda nvml: SimulatedHost(library, client, NODE))


@pytest.fixture
def harness(server: FakeApiServer, library: SimulatedLibrary) -> Harness:
    return Harness(server, library)


class Running:
    """A monitor with all its threads, stopped on exit."""

    def __init__(self, monitor: HealthMonitor) -> None:
        self.monitor = monitor
        self._until = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.monitor.run(self._until)

    def __enter__(self) -> HealthMonitor:
        self.monitor.start()
        self._thread.start()
        return self.monitor

    def __exit__(self, *exc: object) -> None:
        self._until.set()
        self._thread.join(timeout=5)
        self.monitor.stop()
