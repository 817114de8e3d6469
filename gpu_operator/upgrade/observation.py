"""The upgrade planner's vocabulary: the state label's values, what it reads of a node, what it plans, the policy.

The names are NVIDIA's (k8s-operator-libs pkg/upgrade consts.go as vendored in gpu-operator v26.7.0, driver name
`gpu`): the `nvidia.com/gpu-driver-upgrade-state` label, the annotations the upgrade reads and writes, and the
states. :mod:`gpu_operator.upgrade.state_machine` holds the rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "CORDONED",
    "DRIVER_RESTART_LIMIT",
    "FAILURE_ANNOTATION",
    "HOLDS_SLOT",
    "INITIAL_STATE_ANNOTATION",
    "IN_PROGRESS",
    "RELEASED",
    "SAFE_LOAD_ANNOTATION",
    "SKIP_LABEL",
    "STATE_LABEL",
    "UPGRADE_REQUESTED_ANNOTATION",
    "VALIDATION_FAILURE",
    "VALIDATION_START_ANNOTATION",
    "WAIT_START_ANNOTATION",
    "Action",
    "ActionKind",
    "NodeObservation",
    "State",
    "UpgradePolicy",
]

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
INITIAL_STATE_ANNOTATION = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
WAIT_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"
VALIDATION_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-validation-start-time"
FAILURE_ANNOTATION = "nvidia.com/gpu-driver-upgrade-failure-reason"
#: `true` asks for an upgrade of the node whatever its driver pod's revision (NVIDIA's upgrade_requestor.go key).
UPGRADE_REQUESTED_ANNOTATION = "nvidia.com/gpu-driver-upgrade-requested"
#: Set (non-empty) by a driver pod that waits until workloads are gone before it loads; removing it unblocks it.
SAFE_LOAD_ANNOTATION = "nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load"
#: A new driver pod whose not-Ready container restarted more times than this fails the node (isDriverPodFailing).
DRIVER_RESTART_LIMIT = 10
#: The failure reason of a validation timeout starts so: such a node is not retried by itself.
VALIDATION_FAILURE = "the validator was not Ready within"


class State(str, Enum):
    UNKNOWN = ""
    REQUIRED = "upgrade-required"
    CORDON = "cordon-required"
    WAIT_FOR_JOBS = "wait-for-jobs-required"
    POD_DELETION = "pod-deletion-required"
    DRAIN = "drain-required"
    POD_RESTART = "pod-restart-required"
    VALIDATION = "validation-required"
    UNCORDON = "uncordon-required"
    DONE = "upgrade-done"
    FAILED = "upgrade-failed"


#: The states between admission and the end: what maxParallelUpgrades counts.
IN_PROGRESS = frozenset({State.CORDON, State.WAIT_FOR_JOBS, State.POD_DELETION, State.DRAIN, State.POD_RESTART,
                         State.VALIDATION, State.UNCORDON})
#: What maxParallelUpgrades counts: the nodes in progress and the failed ones (NVIDIA's GetUpgradesInProgress).
HOLDS_SLOT = IN_PROGRESS | {State.FAILED}
#: The states of a node the upgrade has cordoned (the cordon step writes the cordon and its next state together).
CORDONED = (IN_PROGRESS - {State.CORDON}) | {State.FAILED}
#: The states a node without a driver pod leaves (upgrade-done stays: nothing of the upgrade is held there).
RELEASED = HOLDS_SLOT | {State.REQUIRED}


class ActionKind(str, Enum):
    SET_STATE = "set-state"        # value "" removes the state label
    CORDON = "cordon"
    UNCORDON = "uncordon"
    ANNOTATE = "annotate"          # value: "key=value", or "key=" to remove
    DELETE_GPU_PODS = "delete-gpu-pods"
    DRAIN = "drain"
    DELETE_DRIVER_POD = "delete-driver-pod"


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    node: str
    value: str = ""


@dataclass(frozen=True)
class UpgradePolicy:
    """`driver.upgradePolicy` as the controller applies it."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = 1
    max_unavailable: int | str = "25%"
    wait_for_jobs: bool = False
    wait_timeout_seconds: int = 0
    drain: bool = False
    validation_timeout_seconds: int = 600
    """0: a validator pod that is not Ready is waited for without limit."""

    def unavailable_budget(self, managed_nodes: int) -> int:
        """maxUnavailable as a node count (a percentage of the managed nodes, rounded up)."""
        value = self.max_unavailable
        if isinstance(value, str) and value.endswith("%"):
            return math.ceil(managed_nodes * int(value[:-1]) / 100)
        return int(value)


@dataclass(frozen=True)
class NodeObservation:
    """One GPU node as the API shows it, reduced to what the planner reads."""

    name: str
    state: State = State.UNKNOWN
    unschedulable: bool = False
    ready: bool = True
    """The node's Ready condition is not False or Unknown (a NotReady node counts against maxUnavailable)."""
    initial_unschedulable: bool | None = None
    """NVIDIA's initial-state annotation: True when present (the node was cordoned before the upgrade), None when
    absent; False only for the explicit `false` older releases of this controller wrote."""
    skip: bool = False
    upgrade_requested: bool = False
    """The `nvidia.com/gpu-driver-upgrade-requested` annotation is `true`."""
    safe_load_waiting: bool = False
    """The driver pod waits for a safe load (its annotation on the node is non-empty)."""
    driver_pod_present: bool = True
    """A driver pod runs on the node. False, while every driver DaemonSet has all its pods, means no DaemonSet
    wants the node: it is not managed and leaves the upgrade."""
    driver_pod_terminating: bool = False
    """Its deletion was asked for: a restart is under way."""
    driver_pod_orphaned: bool = False
    """It has no owner (NVIDIA's IsOrphanedPod): never in sync, restarted at `pod-restart-required`."""
    driver_pod_outdated: bool = False
    """The driver pod's revision differs from the DaemonSet's (the DaemonSet has a newer driver)."""
    config_digest_changed: bool = True
    """The running pod's DRIVER_CONFIG_DIGEST differs from the template's (False: restart-only path)."""
    driver_pod_ready: bool = True
    """The driver pod is Running with every container Ready (NVIDIA's isDriverPodInSync, less the revision)."""
    driver_pod_failing: bool = False
    """A not-Ready container of the driver pod restarted more than DRIVER_RESTART_LIMIT times."""
    gpu_pods: int = 0
    jobs_running: int = 0
    eviction_blocked: bool = False
    """A PodDisruptionBudget refused an eviction of one of the node's pods, or a pod may not be evicted at all."""
    block_reason: str = ""
    """Why, when not a PodDisruptionBudget (a pod with emptyDir data without deleteEmptyDir, a bare pod without
    force): the failure reason the node gets."""
    validator_present: bool = True
    """A validator pod is on the node (Ready or not)."""
    validator_ready: bool = False
    wait_started_at: float | None = None
    validation_started_at: float | None = None
    failure_reason: str = ""

    @property
    def in_sync(self) -> bool:
        """The driver pod is current and owned (podInSyncWithDS): nothing to restart."""
        return not (self.driver_pod_outdated or self.driver_pod_orphaned)
