"""NVIDIA's driver upgrade state machine, as a pure function from what the API shows to what to do next.

The driver DaemonSet is `OnDelete`: a new driver reaches a node only when its driver pod is deleted. The upgrade
controller walks each node whose driver pod is out of date through the states NVIDIA's controller writes to the
`nvidia.com/gpu-driver-upgrade-state` label (reference/gpu-operator.md §9.1; k8s-operator-libs pkg/upgrade as
vendored in gpu-operator v26.7.0):

    upgrade-required → cordon-required → wait-for-jobs-required → pod-deletion-required → drain-required
    → pod-restart-required → validation-required → uncordon-required → upgrade-done   (or upgrade-failed)

* Only nodes that run a driver pod are managed (BuildState builds the node states from driver pods). A node that
  lost its driver pod for good (its driver deploy label turned `false` or `pre-installed`, no driver DaemonSet
  selects it any more) leaves the upgrade: its state label and bookkeeping go and, where the upgrade cordoned
  it, it is uncordoned (NVIDIA leaves it cordoned in its state). The caller guarantees "for good": it plans no
  round while a driver DaemonSet has unscheduled pods (BuildState), so a pod being recreated is never missing.
* A node needs an upgrade when its driver pod's revision differs from its DaemonSet's (a pod without an owner
  never does by itself), when the `nvidia.com/gpu-driver-upgrade-requested` annotation is `true`, or when its
  driver waits for a safe load (`...driver-wait-for-safe-load`). A node unschedulable then gets NVIDIA's
  initial-state annotation (`...unschedulable=true`, only ever `true`: its presence is what is read) and keeps
  its cordon at the end.
* At `upgrade-required` the upgrade-requested annotation is consumed, the skip label read, and the node admitted
  only while the upgrade slots allow it: `maxParallelUpgrades` (0: no limit) counts the nodes in progress **and
  the failed ones** (GetUpgradesInProgress), so at 1 one failure stops further admissions; `maxUnavailable` (a
  count, or a percentage of the managed nodes, rounded up) counts the unschedulable and NotReady nodes and those
  in progress. A node cordoned by someone else is never admitted: it waits at `upgrade-required` until it is
  uncordoned, and its initial-state annotation goes then (NVIDIA admits it past both limits and leaves it
  cordoned after: NVIDIA/gpu-operator#2820).
* Restart-only (shouldRestartOnly): with the driver config digest unchanged, an admitted node is cordoned and goes
  straight to `pod-restart-required` (no waiting for jobs, no pod deletion, no drain) - unless its upgrade was
  requested, its driver waits for a safe load or its pod has no owner.
* `wait-for-jobs-required` waits for the pods of `waitForCompletion.podSelector` on the node (up to its timeout;
  0: forever); `pod-deletion-required` deletes the GPU pods and, once they are gone, goes to
  `pod-restart-required`. Only when the deletion fails does the node go to `drain-required` with `drain.enable`,
  or `upgrade-failed` without; a drain that fails the same way fails the node (with the reason).
* `pod-restart-required` deletes an out-of-date or ownerless driver pod (not one already terminating), unblocks a
  driver waiting for its safe load, and waits until the pod is Running with every container Ready
  (isDriverPodInSync); a pod whose not-Ready container restarted more than 10 times fails the node.
* `validation-required` waits for the node's validator pod to be Ready (and the driver pod still Ready). Without
  a validator pod on the node there is no clock (ValidationManager.Validate); with one not Ready, the clock runs
  up to `validationTimeoutSeconds`. A node cordoned before the upgrade goes straight to `upgrade-done`
  (updateNodeToUncordonOrDoneState); the others to `uncordon-required`: no node is uncordoned on a driver that
  is still installing.
* The start-time annotations of wait-for-jobs and validation are written only when a timeout is set, and removed
  when the node leaves the state.
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

from collections.abc import Sequence

from gpu_operator.upgrade.observation import (
    CORDONED,
    DRIVER_RESTART_LIMIT,
    FAILURE_ANNOTATION,
    HOLDS_SLOT,
    IN_PROGRESS,
    INITIAL_STATE_ANNOTATION,
    RELEASED,
    SAFE_LOAD_ANNOTATION,
    STATE_LABEL,
    UPGRADE_REQUESTED_ANNOTATION,
    VALIDATION_FAILURE,
    VALIDATION_START_ANNOTATION,
    WAIT_START_ANNOTATION,
    Action,
    ActionKind,
    NodeObservation,
    State,
    UpgradePolicy,
)

#: The label and failure annotation are re-exported: the rollout wait of `pulumi up` reads them from here.
__all__ = ["FAILURE_ANNOTATION", "STATE_LABEL", "needs_upgrade", "plan"]


def _set(node: str, state: State) -> Action:
    return Action(ActionKind.SET_STATE, node, state.value)


def _annotate(node: str, key: str, value: str = "") -> Action:
    return Action(ActionKind.ANNOTATE, node, f"{key}={value}")


def _drop(node: NodeObservation, *keys_present: tuple[str, object]) -> list[Action]:
    """Remove each annotation whose value (None or "" when absent) is there."""
    return [_annotate(node.name, key) for key, value in keys_present if value not in (None, "")]


def _fail(node: NodeObservation, reason: str) -> list[Action]:
    return [_annotate(node.name, FAILURE_ANNOTATION, reason), _set(node.name, State.FAILED)]


def _unblock(node: NodeObservation) -> list[Action]:
    """SafeDriverLoadManager.UnblockLoading: removing the annotation lets a waiting driver load."""
    return [_annotate(node.name, SAFE_LOAD_ANNOTATION)] if node.safe_load_waiting else []


def _deletion_failed(node: NodeObservation, policy: UpgradePolicy) -> list[Action]:
    """The GPU pods could not all be deleted: drain with `drain.enable` (the drain's own options may allow what the
    deletion's refused), else the node fails (pod_manager.go updateNodeToDrainOrFailed)."""
    if policy.drain:
        return [_set(node.name, State.DRAIN)]
    return _fail(node, node.block_reason or "a PodDisruptionBudget refused the eviction of a GPU pod")


def _wait_for_jobs(node: NodeObservation, policy: UpgradePolicy, now: float) -> list[Action]:
    """PodManager.ScheduleCheckOnPodCompletion: the start time is kept only under a timeout, and goes on leaving."""
    leave = [*_drop(node, (WAIT_START_ANNOTATION, node.wait_started_at)), _set(node.name, State.POD_DELETION)]
    if not policy.wait_for_jobs or node.jobs_running == 0:
        return leave
    if not policy.wait_timeout_seconds:
        return []
    if node.wait_started_at is None:
        return [_annotate(node.name, WAIT_START_ANNOTATION, str(int(now)))]
    return leave if now - node.wait_started_at > policy.wait_timeout_seconds else []


def _restart(node: NodeObservation) -> list[Action]:
    """pod-restart-required (ProcessPodRestartNodes): an old or ownerless driver pod goes; a current one must be
    Running and Ready before validation."""
    if node.driver_pod_terminating:
        return []  # its deletion was asked for; the DaemonSet recreates it
    if not node.in_sync:
        return [Action(ActionKind.DELETE_DRIVER_POD, node.name)]
    if node.driver_pod_ready:
        return [*_unblock(node), _set(node.name, State.VALIDATION)]
    if node.driver_pod_failing:
        return [*_unblock(node), *_fail(node, f"the new driver pod restarted more than {DRIVER_RESTART_LIMIT} times "
                                              "without becoming Ready")]
    return _unblock(node)  # the new driver is still installing (or waits for its safe load, unblocked now)


def _uncordon_or_done(node: NodeObservation) -> list[Action]:
    """updateNodeToUncordonOrDoneState: a node cordoned before the upgrade is done at once, its record removed."""
    if node.initial_unschedulable is True:
        return [_annotate(node.name, INITIAL_STATE_ANNOTATION), _set(node.name, State.DONE)]
    return [_set(node.name, State.UNCORDON)]


def _validate(node: NodeObservation, policy: UpgradePolicy, now: float) -> list[Action]:
    """validation-required (ProcessValidationRequiredNodes, ValidationManager.Validate)."""
    unblock = _unblock(node)
    started = (VALIDATION_START_ANNOTATION, node.validation_started_at)
    if not node.validator_present:
        return unblock  # no validator pod on the node: nothing to time
    if node.validator_ready and node.driver_pod_ready:
        return [*unblock, *_drop(node, started), *_uncordon_or_done(node)]
    timeout = policy.validation_timeout_seconds
    if not timeout:
        return unblock
    if node.validation_started_at is None:
        return [*unblock, _annotate(node.name, VALIDATION_START_ANNOTATION, str(int(now)))]
    if now - node.validation_started_at > timeout:
        return [*unblock, *_drop(node, started), *_fail(node, f"{VALIDATION_FAILURE} {timeout} s")]
    return unblock


def _uncordon(node: NodeObservation) -> list[Action]:
    # The recorded schedulability is removed only once the node is done (see _bookkeeping): a crash between the
    # two must not lose it, or a node cordoned by someone else would be uncordoned on the retry.
    keep_cordoned = node.initial_unschedulable is True
    actions = [] if keep_cordoned or not node.unschedulable else [Action(ActionKind.UNCORDON, node.name)]
    return [*actions, _set(node.name, State.DONE)]


def _step(node: NodeObservation, policy: UpgradePolicy, now: float) -> list[Action]:
    """The actions of one admitted (in-progress) node."""
    name = node.name
    if node.state is State.CORDON:
        return [*([] if node.unschedulable else [Action(ActionKind.CORDON, name)]), _set(name, State.WAIT_FOR_JOBS)]
    if node.state is State.WAIT_FOR_JOBS:
        return _wait_for_jobs(node, policy, now)
    if node.state is State.POD_DELETION:
        if node.eviction_blocked:
            return _deletion_failed(node, policy)
        return [Action(ActionKind.DELETE_GPU_PODS, name)] if node.gpu_pods else [_set(name, State.POD_RESTART)]
    if node.state is State.DRAIN:
        if not policy.drain:
            return [_set(name, State.POD_RESTART)]  # drain turned off meanwhile (ProcessDrainNodes)
        if node.eviction_blocked:
            return _fail(node, node.block_reason or "a PodDisruptionBudget refused an eviction of the drain")
        return [Action(ActionKind.DRAIN, name)] if node.gpu_pods else [_set(name, State.POD_RESTART)]
    if node.state is State.POD_RESTART:
        return _restart(node)
    if node.state is State.VALIDATION:
        return _validate(node, policy, now)
    if node.state is State.UNCORDON:
        return _uncordon(node)
    return []


def _bookkeeping(node: NodeObservation) -> list[Action]:
    """The annotations of a finished upgrade, removed once the node is done (left by a crash or a release)."""
    return _drop(node, (INITIAL_STATE_ANNOTATION, node.initial_unschedulable), (WAIT_START_ANNOTATION,
                 node.wait_started_at), (VALIDATION_START_ANNOTATION, node.validation_started_at))


def _record_cordon(node: NodeObservation) -> list[Action]:
    """NVIDIA's initial-state annotation, as NVIDIA writes it: `true` on a node unschedulable before the upgrade,
    nothing on a schedulable one (an explicit `false` of an older release is removed: NVIDIA reads presence, and
    so is a `true` whose cordon was lifted while the node waited at `upgrade-required`)."""
    if node.unschedulable and node.initial_unschedulable is not True:
        return [_annotate(node.name, INITIAL_STATE_ANNOTATION, "true")]
    if not node.unschedulable and node.initial_unschedulable is not None:
        return [_annotate(node.name, INITIAL_STATE_ANNOTATION)]
    return []


def _recover(node: NodeObservation) -> list[Action]:
    """A failed node whose driver pod is in sync and Ready is validated again (NVIDIA's ProcessUpgradeFailedNodes
    uncordons it at once); one whose validation timed out stays failed until `upgrade-required` is set."""
    healthy = node.in_sync and not node.driver_pod_terminating and node.driver_pod_ready
    if not healthy or node.failure_reason.startswith(VALIDATION_FAILURE):
        return []
    return [_annotate(node.name, FAILURE_ANNOTATION), *_drop(node, (VALIDATION_START_ANNOTATION,
                                                                    node.validation_started_at)),
            _set(node.name, State.VALIDATION)]


def needs_upgrade(node: NodeObservation) -> bool:
    """ProcessDoneOrUnknownNodes: an out-of-date owned pod, an upgrade asked for, or a driver waiting to load."""
    return (node.driver_pod_outdated and not node.driver_pod_orphaned) or node.upgrade_requested \
        or node.safe_load_waiting


def _entry(node: NodeObservation) -> list[Action]:
    """A managed node not in progress: does it need an upgrade (or is it done)?"""
    if node.state is State.FAILED:
        return _recover(node)
    if node.state not in (State.UNKNOWN, State.DONE):
        return []
    if needs_upgrade(node):
        return [*_record_cordon(node), _set(node.name, State.REQUIRED)]
    return [_set(node.name, State.DONE)] if node.state is State.UNKNOWN else _bookkeeping(node)


def _release(node: NodeObservation) -> list[Action]:
    """A node without a driver pod leaves the upgrade: its state and bookkeeping go, and the cordon the upgrade
    put on it (never one from before the upgrade)."""
    if node.state not in RELEASED:
        return []
    ours = node.state in CORDONED and node.unschedulable and node.initial_unschedulable is not True
    return [*([Action(ActionKind.UNCORDON, node.name)] if ours else []), *_bookkeeping(node),
            *_drop(node, (FAILURE_ANNOTATION, node.failure_reason)), _set(node.name, State.UNKNOWN)]


def plan(nodes: Sequence[NodeObservation], policy: UpgradePolicy, now: float) -> list[Action]:
    """Every action for this round: releases, entries, the steps of nodes in progress, then admissions within the
    limits. The managed nodes (those with a driver pod) are the ones counted in the limits and maxUnavailable's
    percentage."""
    if not policy.auto_upgrade:
        return []
    actions: list[Action] = []
    for node in nodes:
        if not node.driver_pod_present:
            actions += _release(node)
            continue
        actions += _entry(node)
        if node.state in IN_PROGRESS:
            actions += _step(node, policy, now)
    actions += _admissions([node for node in nodes if node.driver_pod_present], policy)
    return actions


def _admit(node: NodeObservation) -> list[Action]:
    """InplaceNodeStateManagerImpl.nextStateForUpgradeRequiredNode: restart-only (cordon, then straight to
    pod-restart-required) unless the digest changed, the upgrade was requested, the driver waits for its safe
    load or its pod has no owner (shouldRestartOnly); else cordon-required."""
    stale = _drop(node, (WAIT_START_ANNOTATION, node.wait_started_at),
                  (VALIDATION_START_ANNOTATION, node.validation_started_at),
                  (FAILURE_ANNOTATION, node.failure_reason))
    restart_only = not (node.config_digest_changed or node.upgrade_requested or node.safe_load_waiting
                        or node.driver_pod_orphaned)
    record = [] if node.failure_reason else _record_cordon(node)  # a retried node's cordon is the upgrade's own
    if not restart_only:
        return [*record, *stale, _set(node.name, State.CORDON)]
    cordon = [] if node.unschedulable else [Action(ActionKind.CORDON, node.name)]
    return [*record, *stale, *cordon, _set(node.name, State.POD_RESTART)]


def _admissions(nodes: Sequence[NodeObservation], policy: UpgradePolicy) -> list[Action]:
    """ProcessUpgradeRequiredNodes over NVIDIA's GetUpgradesAvailable: the upgrade-requested annotation is consumed
    at `upgrade-required` whatever happens next; failed nodes hold a slot; NotReady and cordoned nodes are
    unavailable. A node cordoned by someone else is not admitted (NVIDIA's would be, past every limit): it waits
    at `upgrade-required` until whoever cordoned it uncordons it (NVIDIA/gpu-operator#2820)."""
    holding = sum(node.state in HOLDS_SLOT for node in nodes)
    unavailable = sum(node.unschedulable or not node.ready or node.state in IN_PROGRESS for node in nodes)
    budget = policy.unavailable_budget(len(nodes))
    actions: list[Action] = []
    for node in sorted((n for n in nodes if n.state is State.REQUIRED), key=lambda n: n.name):
        if node.upgrade_requested:
            actions.append(_annotate(node.name, UPGRADE_REQUESTED_ANNOTATION))
        if node.skip or _cordoned_by_others(node) or (policy.max_parallel_upgrades
                                                       and holding >= policy.max_parallel_upgrades):
            continue
        # a NotReady node is cordoned by the upgrade like any other (ProcessUpgradeRequiredNodes checks
        # IsNodeUnschedulable, not readiness); a failed node retried is already counted by its own cordon
        adds_unavailable = not node.unschedulable
        if adds_unavailable and unavailable >= budget:
            continue  # the requests of the nodes further on are consumed all the same
        actions += _admit(node)
        holding += 1
        unavailable += adds_unavailable
    return actions


def _cordoned_by_others(node: NodeObservation) -> bool:
    """Unschedulable, and not by a failed upgrade of ours: a failed node keeps the upgrade's cordon (with its
    failure reason) and is retried by setting `upgrade-required` again, which must take it back in."""
    return node.unschedulable and not node.failure_reason
