"""GPU feature discovery: the `nvidia.com/*` node labels NVIDIA's GFD publishes, from the NVML layer.

The labels are a pure function of a snapshot of the node (:func:`labels.node_labels`); the loop around it
(:mod:`.loop`) adds GFD's run semantics - relabel every sleep interval, reload on SIGHUP, withdraw the labels on
exit - and the sinks (:mod:`.sinks`) put the labels where NFD reads them. `gpu-operator-agent feature-discovery`
is :func:`command.main`.
"""

from gpu_operator.agents.feature_discovery.errors import LabelError, Labels
from gpu_operator.agents.feature_discovery.labels import (
    LabelPolicy,
    NodeSnapshot,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.feature_discovery.mig_strategy import MigStrategy

__all__ = ["LabelError", "Labels", "LabelPolicy", "MigStrategy", "NodeSnapshot", "node_labels", "take_snapshot"]
