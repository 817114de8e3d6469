"""The node status gauges, named and described as NVIDIA's validator exposes them in metrics mode.

Every metric is a gauge with one label, `node` (the node's name). They all exist from the start with value 0;
the probes (:mod:`.probes`) then set them on their own intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUDA_READY",
    "DEVICE_PLUGIN_DEVICES",
    "DEVICE_PLUGIN_LAST_SUCCESS",
    "DRIVER_READY",
    "DRIVER_VALIDATION",
    "DRIVER_VALIDATION_LAST_SUCCESS",
    "GAUGES",
    "METRICS_READY",
    "NODE_LABEL",
    "NVIDIA_PCI_DEVICES",
    "PLUGIN_READY",
    "TOOLKIT_READY",
    "Gauge",
]

NODE_LABEL = "node"

METRICS_READY = "gpu_operator_node_metrics_ready_ts_seconds"
DRIVER_READY = "gpu_operator_node_driver_ready"
TOOLKIT_READY = "gpu_operator_node_toolkit_ready"
PLUGIN_READY = "gpu_operator_node_plugin_ready"
CUDA_READY = "gpu_operator_node_cuda_ready"
DRIVER_VALIDATION = "gpu_operator_node_driver_validation"
DRIVER_VALIDATION_LAST_SUCCESS = "gpu_operator_node_driver_validation_last_success_ts_seconds"
DEVICE_PLUGIN_DEVICES = "gpu_operator_node_device_plugin_devices_total"
DEVICE_PLUGIN_LAST_SUCCESS = "gpu_operator_node_device_plugin_validation_last_success_ts_seconds"
NVIDIA_PCI_DEVICES = "gpu_operator_nvidia_pci_devices_total"


@dataclass(frozen=True, slots=True)
class Gauge:
    name: str
    help: str


GAUGES: tuple[Gauge, ...] = (
    Gauge(METRICS_READY, "timestamp (in seconds) of the launch time of the GPU Operator node metrics Pod"),
    Gauge(DRIVER_READY, "1 if the driver synchronization barrier of the the local node is open, 0 otherwise"),
    Gauge(TOOLKIT_READY, "1 if the container-toolkit synchronization barrier on the local node is open, 0 otherwise"),
    Gauge(PLUGIN_READY, "1 if the device plugin synchronization barrier on the local is open, 0 otherwise"),
    Gauge(CUDA_READY, "1 if cuda synchronization barrier on the local node is open, 0 otherwise"),
    Gauge(DRIVER_VALIDATION, "1 if the driver validation test passed on the local node, 0 otherwise"),
    Gauge(DRIVER_VALIDATION_LAST_SUCCESS, "timestamp (in seconds) of the last successful driver test validation"),
    Gauge(
        DEVICE_PLUGIN_DEVICES,
        "number of GPU devices exposed by the DevicePlugin on the local node. -1 if failing to inspect the node spec.",
    ),
    Gauge(
        DEVICE_PLUGIN_LAST_SUCCESS,
        "timestamp (in seconds) of the last time GPU devices were found on the local node spec",
    ),
    Gauge(NVIDIA_PCI_DEVICES, "number of NVIDIA devices found in the node. -1 if failing to count"),
)
