"""Which driver a GPU node runs: the owner label NVIDIA's operator routes nodes to an NVIDIADriver with.

A driver of its own (`gpu_operator.config.driver_groups`) runs on the nodes labelled
`nvidia.com/gpu-operator.driver.owner=<name>`, its DaemonSets' selector. NVIDIA's operator writes that label
(gpu-operator v26.7.0 `internal/nvidiadriver/nvidiadriver.go` `AssignOwners`, from the node labelling controller):
on every node labelled `nvidia.com/gpu.present=true`, the one non-default NVIDIADriver whose node selector the
node matches, else the default NVIDIADriver, else no owner (the label goes); a node two selectors match is a
conflict, and NVIDIA changes no owner label at all then ("fails closed").

Ours does the same, with one rule first: a node of a pool the stack created belongs to the driver that pool names
(AKS writes the label at the node's creation already); a pool on the cluster's driver has no owner. A node two
selectors match keeps its label, and the others are still assigned: a conflict is reported by the render's checks
before it reaches a cluster, and one odd node does not stop the rest. Nothing is written when no driver of its own
exists (NVIDIA's ClusterPolicy mode never writes the label either).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_operator.labels import GPU_PRESENT_LABEL

__all__ = ["OWNER_LABEL", "POOL_LABEL", "DriverOwner", "DriverOwners", "owner_change"]

OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
#: The AKS agent pool a node belongs to.
POOL_LABEL = "kubernetes.azure.com/agentpool"


@dataclass(frozen=True)
class DriverOwner:
    """One driver of its own, as the owner assignment reads it."""

    name: str
    pools: tuple[str, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    default: bool = False


@dataclass(frozen=True)
class DriverOwners:
    """Every driver of its own, and the pools that run the cluster's driver."""

    drivers: tuple[DriverOwner, ...] = ()
    cluster_pools: tuple[str, ...] = ()

    def desired(self, labels: Mapping[str, str]) -> tuple[bool, str]:
        """(decided, owner): the node's driver ("" for none); not decided when two selectors match the node."""
        pool = labels.get(POOL_LABEL)
        if pool is not None:
            if pool in self.cluster_pools:
                return True, ""
            named = [driver.name for driver in self.drivers if pool in driver.pools]
            if named:
                return True, named[0]
        matching = [driver.name for driver in self.drivers if not driver.default and driver.node_selector
                    and all(labels.get(key) == value for key, value in driver.node_selector.items())]
        if len(matching) > 1:
            return False, ""
        if matching:
            return True, matching[0]
        return True, next((driver.name for driver in self.drivers if driver.default), "")


def owner_change(labels: Mapping[str, str], owners: DriverOwners) -> dict[str, str | None]:
    """The owner label's change on a node with these labels (empty when none, or no driver of its own exists)."""
    if not owners.drivers or labels.get(GPU_PRESENT_LABEL) != "true":
        return {}
    decided, owner = owners.desired(labels)
    current = labels.get(OWNER_LABEL)
    if not decided or current == (owner or None):
        return {}
    return {OWNER_LABEL: owner or None}
