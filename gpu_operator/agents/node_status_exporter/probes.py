"""The checks behind the gauges, each repeated on its own interval as the validator's metrics mode does.

| probe | gauges | every |
| --- | --- | --- |
| status files | driver/toolkit/plugin/cuda `_ready` (1 while the file exists) | 30 s |
| driver validation | `driver_validation` (1/0), `driver_validation_last_success_ts_seconds` on success | 60 s |
| device plugin | `device_plugin_devices_total` (-1 when the Node cannot be read), last success when non-zero; from the same Node: `device_plugin_enabled`, `infiniband_present`, `rdma_devices_total`, the upgrade and MIG state gauges | 30 s |
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
    NodeView,
    count_gpu_resources,
    count_rdma_resources,
)
from gpu_operator.agents.node_status_exporter.node_state import NodeState
from gpu_operator.agents.node_status_exporter.pci_count import PciCounter
from gpu_operator.agents.node_status_exporter.status_files import read_status_files

__all__ = [
    "Probe",
    "ProbeRunner",
    "device_plugin_probe",
    "node_label_gauges",
    "driver_probe",
    "pci_probe",
    "status_files_probe",
]

_log = logging.getLogger(__name__)

Changes = Mapping[str, float | str]

#: Node labels behind the gauges read from the Node.
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
INFINIBAND_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
DRIVER_UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"


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


def node_label_gauges(view: NodeView) -> dict[str, float | str]:
    """The gauges the Node's labels and RDMA capacity give (see :mod:`.gauges`)."""
    labels = view.labels
    return {
        g.DEVICE_PLUGIN_ENABLED: 0.0 if labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) == "false" else 1.0,
        g.INFINIBAND_PRESENT: 1.0 if labels.get(INFINIBAND_LABEL) == "true" else 0.0,
        g.RDMA_DEVICES: float(count_rdma_resources(view.capacity)),
        g.DRIVER_UPGRADE_STATE: labels.get(DRIVER_UPGRADE_STATE_LABEL, ""),
        g.MIG_CONFIG_STATE: labels.get(MIG_CONFIG_STATE_LABEL, ""),
    }


def device_plugin_probe(node: NodeCapacity, clock: Callable[[], float], interval: float) -> Probe:
    def run() -> Changes:
        try:
            view = node.read()
            count = count_gpu_resources(view.capacity)
            extra = node_label_gauges(view)
        except NodeApiError as error:
            _log.debug("device plugin devices: %s", error)
            return {g.DEVICE_PLUGIN_DEVICES: -1.0}
        changes: dict[str, float | str] = {g.DEVICE_PLUGIN_DEVICES: float(count), **extra}
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
                    _log.info("%s: %s", probe.name, ", ".join(f"{k}={v}" for k, v in sorted(watched.items())))
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
