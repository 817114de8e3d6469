"""The node status gauges, named and described as NVIDIA's validator exposes them in metrics mode, and ours.

Every metric in :data:`GAUGES` is a gauge with one label, `node` (the node's name). They all exist from the start
(value 0, except the launch time and `device_plugin_enabled`, 1); the probes (:mod:`.probes`) then set them on their
own intervals. Beyond NVIDIA's, read from the same Node object the device-plugin count already reads (no extra
request or permission), so alerts can see what only node labels and capacity say:

* `gpu_operator_node_device_plugin_enabled`: 0 where `nvidia.com/gpu.deploy.device-plugin=false` (DRA pools),
  so the plugin alerts stay quiet on nodes that by design advertise no `nvidia.com/gpu`;
* `gpu_operator_node_driver_upgrade_state{state}` and `gpu_operator_node_mig_config_state{state}`: 1 for the
  node's `nvidia.com/gpu-driver-upgrade-state` / `nvidia.com/mig.config.state` label value (no series without
  the label), so "stuck in one state" is an alert's `for`;
* `gpu_operator_node_infiniband_present` (NFD's `pci-15b3.present` label) and
  `gpu_operator_node_rdma_devices_total` (the sum of the Node's `rdma/*` capacity).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CUDA_READY",
    "DEVICE_PLUGIN_DEVICES",
    "DEVICE_PLUGIN_ENABLED",
    "DRIVER_UPGRADE_STATE",
    "INFINIBAND_PRESENT",
    "MIG_CONFIG_STATE",
    "RDMA_DEVICES",
    "STATE_GAUGES",
    "DEVICE_PLUGIN_LAST_SUCCESS",
    "DRIVER_READY",
    "DRIVER_VALIDATION",
    "DRIVER_VALIDATION_LAST_SUCCESS",
    "GAUGES",
    "NODE_GAUGES",
    "VALIDATOR_GAUGES",
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
DEVICE_PLUGIN_ENABLED = "gpu_operator_node_device_plugin_enabled"
INFINIBAND_PRESENT = "gpu_operator_node_infiniband_present"
RDMA_DEVICES = "gpu_operator_node_rdma_devices_total"
DRIVER_UPGRADE_STATE = "gpu_operator_node_driver_upgrade_state"
MIG_CONFIG_STATE = "gpu_operator_node_mig_config_state"


@dataclass(frozen=True, slots=True)
class Gauge:
    name: str
    help: str


#: NVIDIA's validator gauges, names and HELP texts as it exposes them.
VALIDATOR_GAUGES: tuple[Gauge, ...] = (
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

#: Ours, from the Node the device-plugin count reads anyway.
NODE_GAUGES: tuple[Gauge, ...] = (
    Gauge(DEVICE_PLUGIN_ENABLED, "0 if the node is labelled nvidia.com/gpu.deploy.device-plugin=false, 1 otherwise"),
    Gauge(INFINIBAND_PRESENT, "1 if NFD labelled the node with an InfiniBand NIC (pci-15b3.present), 0 otherwise"),
    Gauge(RDMA_DEVICES, "sum of the node's rdma/* capacity (RDMA device plugins)"),
)

GAUGES: tuple[Gauge, ...] = VALIDATOR_GAUGES + NODE_GAUGES

#: Gauges with a `state` label besides `node`: one series, value 1, for the node label's current value.
STATE_GAUGES: tuple[Gauge, ...] = (
    Gauge(DRIVER_UPGRADE_STATE, "1 for the node's nvidia.com/gpu-driver-upgrade-state label value"),
    Gauge(MIG_CONFIG_STATE, "1 for the node's nvidia.com/mig.config.state label value"),
)
