"""The NodeFeatureRule that marks InfiniBand nodes: `feature.node.kubernetes.io/pci-15b3.present=true`.

Everything of the Network Operator keys off that label (the MOFED driver, the device plugins, the NicClusterPolicy
node affinity, and the GPU operator's MOFED validation). The chart's own rule labels any Mellanox device of class
Ethernet or InfiniBand, which on Azure includes the accelerated-networking Ethernet VFs of every VM; this rule,
as Azure's, matches only the InfiniBand virtual functions by PCI device id (`101c` ConnectX-6, `101e` the
ConnectX-7 generation), taken from the pools' VM sizes.
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.k8s import Object, metadata

__all__ = ["IB_NODE_LABEL", "MELLANOX_VENDOR", "RULE_NAME", "node_feature_rule"]

IB_NODE_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
MELLANOX_VENDOR = "15b3"
RULE_NAME = "nfd-network-rule"


def node_feature_rule(config: GpuStackConfig) -> Object:
    """The rule labelling nodes that have an InfiniBand VF of one of `network.vfDeviceIds`."""
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": metadata(RULE_NAME),
        "spec": {
            "rules": [{
                "name": RULE_NAME,
                "labels": {IB_NODE_LABEL: "true"},
                "matchFeatures": [{
                    "feature": "pci.device",
                    "matchExpressions": {
                        "vendor": {"op": "In", "value": [MELLANOX_VENDOR]},
                        "device": {"op": "In", "value": list(config.network.vf_device_ids)},
                    },
                }],
            }]
        },
    }
