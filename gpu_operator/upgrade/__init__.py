"""The rolling driver upgrade: NVIDIA's per-node state machine as a pure planner (observed nodes -> actions)."""

from gpu_operator.upgrade.observation import (
    HOLDS_SLOT,
    IN_PROGRESS,
    STATE_LABEL,
    Action,
    NodeObservation,
    State,
    UpgradePolicy,
)
from gpu_operator.upgrade.groups import CLUSTER_GROUP, plan_groups
from gpu_operator.upgrade.state_machine import plan

__all__ = ["CLUSTER_GROUP", "HOLDS_SLOT", "IN_PROGRESS", "STATE_LABEL", "Action", "NodeObservation", "State",
           "UpgradePolicy", "plan", "plan_groups"]
