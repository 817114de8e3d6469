"""The node status gauges: names, HELP texts and type as the validator exposes them, and their state."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpu_operator.agents.exposition import SnapshotHolder
from gpu_operator.agents.node_status_exporter import GAUGES, NodeState
from gpu_operator.agents.node_status_exporter import gauges as g

VALIDATOR_GAUGES = {
    "gpu_operator_node_metrics_ready_ts_seconds":
        "timestamp (in seconds) of the launch time of the GPU Operator node metrics Pod",
    "gpu_operator_node_driver_ready":
        "1 if the driver synchronization barrier of the the local node is open, 0 otherwise",
    "gpu_operator_node_toolkit_ready":
        "1 if the container-toolkit synchronization barrier on the local node is open, 0 otherwise",
    "gpu_operator_node_plugin_ready":
        "1 if the device plugin synchronization barrier on the local is open, 0 otherwise",
    "gpu_operator_node_cuda_ready": "1 if cuda synchronization barrier on the local node is open, 0 otherwise",
    "gpu_operator_node_driver_validation": "1 if the driver validation test passed on the local node, 0 otherwise",
    "gpu_operator_node_driver_validation_last_success_ts_seconds":
        "timestamp (in seconds) of the last successful driver test validation",
    "gpu_operator_node_device_plugin_devices_total":
        "number of GPU devices exposed by the DevicePlugin on the local node. -1 if failing to inspect the node spec.",
    "gpu_operator_node_device_plugin_validation_last_success_ts_seconds":
        "timestamp (in seconds) of the last time GPU devices were found on the local node spec",
    "gpu_operator_nvidia_pci_devices_total": "number of NVIDIA devices found in the node. -1 if failing to count",
}


def families(holder: SnapshotHolder) -> dict[str, tuple[str, str, dict[str, str], float]]:
    parsed = text_string_to_metric_families(holder.current().body.decode())
    return {f.name: (f.documentation, f.type, f.samples[0].labels, f.samples[0].value) for f in parsed}


def test_gauges_are_the_validators() -> None:
    assert {gauge.name: gauge.help for gauge in g.VALIDATOR_GAUGES} == VALIDATOR_GAUGES
    ours = {gauge.name for gauge in g.NODE_GAUGES}
    assert ours == {g.DEVICE_PLUGIN_ENABLED, g.INFINIBAND_PRESENT, g.RDMA_DEVICES}
    assert {gauge.name for gauge in GAUGES} == set(VALIDATOR_GAUGES) | ours


def test_every_gauge_starts_at_zero_but_the_launch_time() -> None:
    holder = SnapshotHolder()
    NodeState("worker-1", holder, started_at=1795254312.8)
    exposed = families(holder)
    assert set(exposed) == {gauge.name for gauge in GAUGES}  # the state gauges have no series yet
    helps = {gauge.name: gauge.help for gauge in GAUGES}
    starts = {g.METRICS_READY: 1795254312.0, g.DEVICE_PLUGIN_ENABLED: 1.0}
    for name, (help_text, kind, labels, value) in exposed.items():
        assert (help_text, kind, labels) == (helps[name], "gauge", {"node": "worker-1"})
        assert value == starts.get(name, 0.0)
    assert b"gpu_operator_node_metrics_ready_ts_seconds{node=\"worker-1\"} 1.795254312e+09\n" in holder.current().body


def test_updates_are_published() -> None:
    holder = SnapshotHolder()
    state = NodeState("worker-1", holder, started_at=0)
    state.update({g.DRIVER_READY: 1.0, g.NVIDIA_PCI_DEVICES: -1.0})
    assert families(holder)[g.DRIVER_READY][3] == 1.0
    assert families(holder)[g.NVIDIA_PCI_DEVICES][3] == -1.0
    assert state.values()[g.TOOLKIT_READY] == 0.0
    with pytest.raises(KeyError, match="not a node status gauge"):
        state.update({"gpu_operator_node_bogus": 1.0})
