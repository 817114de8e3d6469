"""NVIDIA's driver upgrade state machine, as a pure function from what the API shows to what to do next.

The driver DaemonSet is `OnDelete`: a new driver reaches a node only when its driver pod is deleted. The upgrade
controller walks each node whose driver pod is out of date through the states NVIDIA's controller writes to the
`nvidia.com/gpu-driver-upgrade-state` label (reference/gpu-operator.md §9.1):

    upgrade-required → cordon-required → wait-for-jobs-required → pod-deletion-required → drain-required
    → pod-restart-required → validation-required → uncordon-required → upgrade-done   (or upgrade-failed)

* A node enters `cordon-required` only while the upgrade slots allow it: `maxParallelUpgrades` (0: no limit)
  counts the nodes in progress **and the failed ones** (NVIDIA's GetUpgradesInProgress), so at 1 one failure
  stops further admissions and a bad driver does not spread; `maxUnavailable` (a count, or a percentage of the
  managed nodes, rounded up) counts the unschedulable and NotReady nodes and those in progress. A node already
  cordoned adds no unavailability and passes the maxUnavailable limit, never maxParallelUpgrades. A node that is
  unschedulable when it needs an upgrade gets NVIDIA's initial-state annotation (`...unschedulable=true`, only
  ever `true`: its presence is what is read), and keeps its cordon at the end.
* With the driver config digest unchanged (only a label of the DaemonSet changed), a cordoned node goes straight
  to `pod-restart-required`: no waiting for jobs, no pod deletion, no drain.
* `wait-for-jobs-required` waits for the pods of `waitForCompletion.podSelector` on the node (up to its timeout; 0:
  forever); `pod-deletion-required` deletes the GPU pods and, once they are gone, goes to `pod-restart-required`.
  Only when the deletion fails (a pod that may not be evicted, a PodDisruptionBudget refusing past the timeout)
  does the node go to `drain-required` with `drain.enable`, or `upgrade-failed` without; a drain that fails the
  same way fails the node (with the reason).
* `pod-restart-required` deletes the old driver pod and waits until the new one is Running with every container
  Ready (NVIDIA's isDriverPodInSync); a new driver pod whose not-Ready container restarted more than 10 times
  fails the node. `validation-required` then waits for the node's validator to be Ready (and the driver pod still
  Ready), up to `validationTimeoutSeconds`, before `uncordon-required`: no node is uncordoned on a driver that is
  still installing.
* `nvidia.com/gpu-driver-upgrade.skip=true` is read where NVIDIA reads it, at `upgrade-required`: the node is not
  admitted; a node already in progress finishes. A failed node keeps its cordon; it returns through
  `validation-required` once its driver pod is in sync and Ready (NVIDIA's ProcessUpgradeFailedNodes goes
  straight to uncordon), except after a validation timeout, which only setting `upgrade-required` again retries.

Everything the planner needs is on the nodes (labels, annotations, schedulability) and their pods, so a controller
that restarts re-plans from the API and resumes; and every action is planned only if it does not already hold
(no cordon of a cordoned node, no deletion of a pod already gone), so a step interrupted before its state label
was written is not repeated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "DRIVER_RESTART_LIMIT",
    "HOLDS_SLOT",
    "IN_PROGRESS",
    "STATE_LABEL",
    "Action",
    "ActionKind",
    "NodeObservation",
    "State",
    "UpgradePolicy",
    "plan",
]

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
SKIP_LABEL = "nvidia.com/gpu-driver-upgrade.skip"
INITIAL_STATE_ANNOTATION = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
WAIT_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"
VALIDATION_START_ANNOTATION = "nvidia.com/gpu-driver-upgrade-validation-start-time"
FAILURE_ANNOTATION = "nvidia.com/gpu-driver-upgrade-failure-reason"
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


class ActionKind(str, Enum):
    SET_STATE = "set-state"
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
    driver_pod_present: bool = True
    driver_pod_outdated: bool = False
    """The driver pod's revision differs from the DaemonSet's (the DaemonSet has a newer driver)."""
    config_digest_changed: bool = True
    """The running pod's DRIVER_CONFIG_DIGEST differs from the template's (False: restart-only fast path)."""
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
    validator_ready: bool = False
    wait_started_at: float | None = None
    validation_started_at: float | None = None
    failure_reason: str = ""


def _set(node: str, state: State) -> Action:
    return Action(ActionKind.SET_STATE, node, state.value)


def _annotate(node: str, key: str, value: str = "") -> Action:
    return Action(ActionKind.ANNOTATE, node, f"{key}={value}")


def _fail(node: NodeObservation, reason: str) -> list[Action]:
    return [_annotate(node.name, FAILURE_ANNOTATION, reason), _set(node.name, State.FAILED)]


def _deletion_failed(node: NodeObservation, policy: UpgradePolicy) -> list[Action]:
    """The GPU pods could not all be deleted: drain with `drain.enable` (the drain's own options may allow what the
    deletion's refused), else the node fails (pod_manager.go updateNodeToDrainOrFailed)."""
    if policy.drain:
        return [_set(node.name, State.DRAIN)]
    return _fail(node, node.block_reason or "a PodDisruptionBudget refused the eviction of a GPU pod")


def _restart(node: NodeObservation, now: float) -> list[Action]:
    """pod-restart-required: the old driver pod goes; the new one must be Running and Ready before validation."""
    name = node.name
    if node.driver_pod_present and node.driver_pod_outdated:
        return [Action(ActionKind.DELETE_DRIVER_POD, name)]
    if not node.driver_pod_present:
        return []  # the DaemonSet is creating the new pod
    if node.driver_pod_ready:
        return [_annotate(name, VALIDATION_START_ANNOTATION, str(int(now))), _set(name, State.VALIDATION)]
    if node.driver_pod_failing:
        return _fail(node, f"the new driver pod restarted more than {DRIVER_RESTART_LIMIT} times without becoming "
                           "Ready")
    return []  # the new driver is still installing


def _validate(node: NodeObservation, policy: UpgradePolicy, now: float) -> list[Action]:
    name = node.name
    if node.validator_ready and node.driver_pod_present and node.driver_pod_ready:
        return [_set(name, State.UNCORDON)]
    if node.validation_started_at is None:  # lost in a crash before the state was written: start the clock
        return [_annotate(name, VALIDATION_START_ANNOTATION, str(int(now)))]
    if policy.validation_timeout_seconds and now - node.validation_started_at >= policy.validation_timeout_seconds:
        return _fail(node, f"{VALIDATION_FAILURE} {policy.validation_timeout_seconds} s")
    return []


def _step(node: NodeObservation, policy: UpgradePolicy, now: float) -> list[Action]:
    """The actions of one admitted (in-progress) node."""
    name = node.name
    if node.state is State.CORDON:
        actions = [] if node.unschedulable else [Action(ActionKind.CORDON, name)]
        nxt = State.WAIT_FOR_JOBS if node.config_digest_changed else State.POD_RESTART
        return [*actions, _set(name, nxt)]
    if node.state is State.WAIT_FOR_JOBS:
        if not policy.wait_for_jobs or node.jobs_running == 0:
            return [_set(name, State.POD_DELETION)]
        if node.wait_started_at is None:
            return [_annotate(name, WAIT_START_ANNOTATION, str(int(now)))]
        if policy.wait_timeout_seconds and now - node.wait_started_at >= policy.wait_timeout_seconds:
            return [_set(name, State.POD_DELETION)]
        return []
    if node.state is State.POD_DELETION:
        if node.eviction_blocked:
            return _deletion_failed(node, policy)
        if node.gpu_pods:
            return [Action(ActionKind.DELETE_GPU_PODS, name)]
        return [_set(name, State.POD_RESTART)]
    if node.state is State.DRAIN:
        if not policy.drain:
            return [_set(name, State.POD_RESTART)]  # drain turned off meanwhile (ProcessDrainNodes)
        if node.eviction_blocked:
            return _fail(node, node.block_reason or "a PodDisruptionBudget refused an eviction of the drain")
        if node.gpu_pods:
            return [Action(ActionKind.DRAIN, name)]
        return [_set(name, State.POD_RESTART)]
    if node.state is State.POD_RESTART:
        return _restart(node, now)
    if node.state is State.VALIDATION:
        return _validate(node, policy, now)
    if node.state is State.UNCORDON:
        # The recorded schedulability is removed only once the node is done (see _entry): a crash between the
        # two must not lose it, or a node cordoned by someone else would be uncordoned on the retry.
        keep_cordoned = node.initial_unschedulable is True
        actions = [] if keep_cordoned or not node.unschedulable else [Action(ActionKind.UNCORDON, name)]
        return [*actions, _set(name, State.DONE)]
    return []


def _bookkeeping(node: NodeObservation) -> list[Action]:
    """The annotations of a finished upgrade, removed once the node is done."""
    kept = ((INITIAL_STATE_ANNOTATION, node.initial_unschedulable is not None),
            (WAIT_START_ANNOTATION, node.wait_started_at is not None),
            (VALIDATION_START_ANNOTATION, node.validation_started_at is not None))
    return [_annotate(node.name, key) for key, present in kept if present]


def _record_cordon(node: NodeObservation) -> list[Action]:
    """NVIDIA's initial-state annotation, as NVIDIA writes it: `true` on a node unschedulable before the upgrade,
    nothing on a schedulable one (an explicit `false` of an older release is removed: NVIDIA reads presence)."""
    if node.unschedulable and node.initial_unschedulable is not True:
        return [_annotate(node.name, INITIAL_STATE_ANNOTATION, "true")]
    if not node.unschedulable and node.initial_unschedulable is False:
        return [_annotate(node.name, INITIAL_STATE_ANNOTATION)]
    return []


def _recover(node: NodeObservation, now: float) -> list[Action]:
    """A failed node whose driver pod is in sync and Ready is validated again (NVIDIA's ProcessUpgradeFailedNodes
    uncordons it at once); one whose validation timed out stays failed until `upgrade-required` is set."""
    healthy = node.driver_pod_present and not node.driver_pod_outdated and node.driver_pod_ready
    if not healthy or node.failure_reason.startswith(VALIDATION_FAILURE):
        return []
    return [_annotate(node.name, FAILURE_ANNOTATION), _annotate(node.name, VALIDATION_START_ANNOTATION, str(int(now))),
            _set(node.name, State.VALIDATION)]


def _entry(node: NodeObservation, now: float) -> list[Action]:
    """A node not in progress: does it need an upgrade (or is it done)?"""
    if node.state is State.FAILED:
        return _recover(node, now)
    if node.state in IN_PROGRESS or node.state is State.REQUIRED:
        return []
    if node.driver_pod_present and node.driver_pod_outdated:
        return [*_record_cordon(node), _set(node.name, State.REQUIRED)]
    if node.state is State.UNKNOWN and node.driver_pod_present:
        return [_set(node.name, State.DONE)]
    if node.state is State.DONE:
        return _bookkeeping(node)
    return []


def plan(nodes: Sequence[NodeObservation], policy: UpgradePolicy, now: float) -> list[Action]:
    """Every action for this round: entries, the steps of nodes in progress, then admissions within the limits.

    Every observed node is managed (counted in maxUnavailable's percentage and the limits); the skip label keeps
    a node at `upgrade-required` only (NVIDIA's ProcessUpgradeRequiredNodes)."""
    if not policy.auto_upgrade:
        return []
    actions: list[Action] = []
    for node in nodes:
        actions += _entry(node, now)
        if node.state in IN_PROGRESS:
            actions += _step(node, policy, now)
    actions += _admissions(nodes, policy)
    return actions


def _admissions(nodes: Sequence[NodeObservation], policy: UpgradePolicy) -> list[Action]:
    """NVIDIA's GetUpgradesAvailable: failed nodes hold a slot; NotReady and cordoned nodes are unavailable."""
    holding = sum(node.state in HOLDS_SLOT for node in nodes)
    unavailable = sum(node.unschedulable or not node.ready or node.state in IN_PROGRESS for node in nodes)
    budget = policy.unavailable_budget(len(nodes))
    actions: list[Action] = []
    for node in sorted((n for n in nodes if n.state is State.REQUIRED and not n.skip), key=lambda n: n.name):
        if policy.max_parallel_upgrades and holding >= policy.max_parallel_upgrades:
            break
        # only a node already cordoned passes an exhausted budget; a NotReady one is cordoned by the upgrade like
        # any other (ProcessUpgradeRequiredNodes checks IsNodeUnschedulable, not readiness)
        adds_unavailable = not node.unschedulable
        if adds_unavailable and unavailable >= budget:
            continue  # an already cordoned node further on may still go
        actions += [*_record_cordon(node),
                    *[_annotate(node.name, key) for key, at in ((WAIT_START_ANNOTATION, node.wait_started_at),
                                                                (VALIDATION_START_ANNOTATION,
                                                                 node.validation_started_at)) if at is not None],
                    _set(node.name, State.CORDON)]
        holding += 1
        unavailable += adds_unavailable
    return actions
