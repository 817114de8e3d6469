"""Readiness of cluster layers read from what the operators report on the nodes (no Pulumi, no rendering)."""

from gpu_operator.readiness.driver_rollout import (
    DriverRollout,
    DriverRolloutFailed,
    DriverRolloutTimeout,
    RolloutSnapshot,
    driver_rollout,
    kubeconfig_rollout_lister,
    wait_for_driver_rollout,
)
from gpu_operator.readiness.mofed import (
    AGENT_POOL_LABEL,
    IB_NODE_LABEL,
    MOFED_WAIT_LABEL,
    DriverImage,
    MofedNotReady,
    MofedReadiness,
    kubeconfig_mofed_pod_lister,
    kubeconfig_node_lister,
    mofed_readiness,
    wait_for_mofed,
)

__all__ = [
    "DriverRollout",
    "DriverRolloutFailed",
    "DriverRolloutTimeout",
    "RolloutSnapshot",
    "driver_rollout",
    "kubeconfig_rollout_lister",
    "wait_for_driver_rollout",
    "AGENT_POOL_LABEL",
    "DriverImage",
    "IB_NODE_LABEL",
    "MOFED_WAIT_LABEL",
    "MofedNotReady",
    "MofedReadiness",
    "kubeconfig_mofed_pod_lister",
    "kubeconfig_node_lister",
    "mofed_readiness",
    "wait_for_mofed",
]
