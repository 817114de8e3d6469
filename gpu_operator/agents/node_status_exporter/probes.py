"""The checks behind the gauges, each repeated on its own interval as the validator's metrics mode does.

| probe | gauges | every |
| --- | --- | --- |
| status files | driver/toolkit/plugin/cuda `_ready` (1 while the file exists) | 30 s |
| driver validation | `driver_validation` (1/0), `driver_validation_last_success_ts_seconds` on success | 60 s |
| device plugin | `device_plugin_devices_total` (-1 when the Node cannot be read), last success when non-zero | 30 s |
| PCI devices | `nvidia_pci_devices_total` (-1 when they cannot be counted) | 60 s |

Each probe runs once at start, then sleeps its interval, on its own daemon thread, so a slow `nvidia-smi` never
delays the status files. A probe's result is a set of gauge changes applied to the :class:`NodeState`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.node_status_exporter import gauges as g
from gpu_operator.agents.node_status_exporter.driver_check import DriverCheck
from gpu_operator.agents.node_status_exporter.node_capacity import (
    NodeApiError,
    NodeCapacity,
    count_gpu_resources,
)
from gpu_operator.agents.node_status_exporter.node_state import NodeState
from gpu_operator.agents.node_status_exporter.pci_count import PciCounter
from gpu_operator.agents.node_status_exporter.status_files import read_status_files

__all__ = [
    "Probe",
    "ProbeRunner",
    "device_plugin_probe",
    "driver_probe",
    "pci_probe",
    "status_files_probe",
]

_log = logging.getLogger(__name__)

Changes = Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Probe:
    name: str
    interval: float
    run: Callable[[], Changes]


def status_files_probe(directory: str, interval: float) -> Probe:
    return Probe("status files", interval, lambda: read_status_files(directory))


def driver_probe(check: DriverCheck, clock: Callable[[], float], interval: float) -> Probe:
    def run() -> Changes:
        if check():
            return {g.DRIVER_VALIDATION: 1.0, g.DRIVER_VALIDATION_LAST_SUCCESS: float(int(clock()))}
        return {g.DRIVER_VALIDATION: 0.0}

    return Probe("driver validation", interval, run)


def device_plugin_probe(node: NodeCapacity, clock: Callable[[], float], interval: float) -> Probe:
    def run() -> Changes:
        try:
            count = count_gpu_resources(node.capacity())
        except NodeApiError as error:
            _log.debug("device plugin devices: %s", error)
            return {g.DEVICE_PLUGIN_DEVICES: -1.0}
        changes = {g.DEVICE_PLUGIN_DEVICES: float(count)}
        if count:
            changes[g.DEVICE_PLUGIN_LAST_SUCCESS] = float(int(clock()))
        return changes

    return Probe("device plugin devices", interval, run)


def pci_probe(counter: PciCounter, interval: float) -> Probe:
    return Probe("NVIDIA PCI devices", interval, lambda: {g.NVIDIA_PCI_DEVICES: float(counter())})


class ProbeRunner:
    """Runs each probe on its own daemon thread, applying its changes to `state`, until `stop()`."""

    def __init__(self, state: NodeState, probes: Sequence[Probe]) -> None:
        self._state = state
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(probe,), name=f"probe:{probe.name}", daemon=True)
            for probe in probes
        ]

    def _loop(self, probe: Probe) -> None:
        previous: Changes | None = None
        while not self._stopping.is_set():
            try:
                changes = probe.run()
            except Exception:  # noqa: BLE001 - one failing probe must not silence the others
                _log.exception("%s probe failed", probe.name)
            else:
                self._state.update(changes)
                watched = {k: v for k, v in changes.items() if not k.endswith("_ts_seconds")}
                if previous is None or watched != previous:
                    _log.info("%s: %s", probe.name, ", ".join(f"{k}={v:g}" for k, v in sorted(watched.items())))
                previous = watched
            self._stopping.wait(probe.interval)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join()
