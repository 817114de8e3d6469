"""The rolling driver upgrade: NVIDIA's per-node state machine as a pure planner (observed nodes -> actions)."""

from gpu_operator.upgrade.state_machine import (
    IN_PROGRESS,
    STATE_LABEL,
    Action,
    NodeObservation,
    UpgradePolicy,
    State,
    plan,
)

__all__ = ["IN_PROGRESS", "STATE_LABEL", "Action", "NodeObservation", "State", "UpgradePolicy", "plan"]
