"""Driver groups: one upgrade per driver, each within its own upgrade policy.

NVIDIA's operator runs one driver per NVIDIADriver custom resource, and its upgrade controller takes every driver
DaemonSet's nodes through one state machine under the ClusterPolicy's single `upgradePolicy`. Here each driver of
its own (a pool's, a `drivers` entry: `gpu_operator.config.driver_groups`) has its own `upgradePolicy`, so its
nodes are planned apart: `maxParallelUpgrades` counts the group's own nodes in progress and failed, and
`maxUnavailable` (a percentage of the group's managed nodes) its own unavailable ones. A failure in one group
holds that group's slots only, and a group whose DaemonSets are short of pods (a pod being recreated) sits the
round out alone. The cluster's driver is the group named "" under the ClusterPolicy's policy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from gpu_operator.upgrade.observation import Action, NodeObservation, UpgradePolicy
from gpu_operator.upgrade.state_machine import plan

__all__ = ["CLUSTER_GROUP", "plan_groups"]

#: The group of the cluster's driver (`operator.driver`, NVIDIA's ClusterPolicy driver).
CLUSTER_GROUP = ""


def plan_groups(nodes: Sequence[tuple[str, NodeObservation]], policies: Mapping[str, UpgradePolicy], now: float,
                paused: Collection[str] = ()) -> list[Action]:
    """Every action of this round: each group's nodes (`(group, node)` pairs) planned under its own policy
    (KeyError for a group without one); the `paused` groups take no step."""
    by_group: dict[str, list[NodeObservation]] = {}
    for group, node in nodes:
        by_group.setdefault(group, []).append(node)
    actions: list[Action] = []
    for group, members in by_group.items():
        if group not in paused:
            actions += plan(members, policies[group], now)
    return actions
