"""The node status exporter: the GPU operator validator's metrics mode (`COMPONENT=metrics`).

`gpu-operator-agent node-status-exporter` serves the `gpu_operator_node_*` gauges (:mod:`.gauges`) on
`:METRICS_PORT/metrics`: whether the validator's status files are there (:mod:`.status_files`), whether
`nvidia-smi` works (:mod:`.driver_check`), how many GPUs the device plugin advertises on the Node
(:mod:`.node_capacity`) and how many NVIDIA PCI devices the node has (:mod:`.pci_count`), each refreshed on
its own interval (:mod:`.probes`). It reads no GPU itself.
"""

from gpu_operator.agents.node_status_exporter.gauges import GAUGES, Gauge
from gpu_operator.agents.node_status_exporter.node_state import NodeState
from gpu_operator.agents.node_status_exporter.probes import Probe, ProbeRunner

__all__ = ["GAUGES", "Gauge", "NodeState", "Probe", "ProbeRunner"]
