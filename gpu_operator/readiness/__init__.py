"""Readiness of cluster layers read from what the operators report on the nodes (no Pulumi, no rendering)."""

from gpu_operator.readiness.mofed import (
    AGENT_POOL_LABEL,
    IB_NODE_LABEL,
    MOFED_WAIT_LABEL,
    MofedNotReady,
    MofedReadiness,
    kubeconfig_node_lister,
    mofed_readiness,
    wait_for_mofed,
)

__all__ = [
    "AGENT_POOL_LABEL",
    "IB_NODE_LABEL",
    "MOFED_WAIT_LABEL",
    "MofedNotReady",
    "MofedReadiness",
    "kubeconfig_node_lister",
    "mofed_readiness",
    "wait_for_mofed",
]
