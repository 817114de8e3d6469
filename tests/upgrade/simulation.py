"""A simulated cluster for the upgrade planner: nodes, their pods, and how the API and kubelet answer actions.

Time passes in ticks. A deleted driver pod comes back at the new revision, owned by the DaemonSet and not Ready:
it installs for a few ticks (`install_ticks`), or crash-loops (`crash_ticks`: one restart a tick, then Ready once
the restarts pass that count; None: never), or waits for its safe load (the node's safe-load annotation) until the
controller removes the annotation. A validator turns Ready only after the driver pod is Ready (its init containers
wait for the driver), unless `validation_never`; on a node without one (`validator_present` False) none ever
runs. GPU pod deletion is refused while `pdb_blocks`; a drain (its own options) is refused while `drain_blocks`.
A node `leaves` when the DaemonSet stops selecting it: its driver pod goes and none comes back.

The controller writes one merge patch per node after its pod actions (the actuator's order); a crash cuts the
writes between two of them (:func:`writes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_operator.upgrade import Action, NodeObservation, State
from gpu_operator.upgrade.observation import (
    DRIVER_RESTART_LIMIT,
    FAILURE_ANNOTATION,
    INITIAL_STATE_ANNOTATION,
    SAFE_LOAD_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    VALIDATION_START_ANNOTATION,
    WAIT_START_ANNOTATION,
    ActionKind,
)

NEW, OLD = "new", "old"
POD_ACTIONS = frozenset({ActionKind.DELETE_GPU_PODS, ActionKind.DRAIN, ActionKind.DELETE_DRIVER_POD})


@dataclass
class SimNode:
    name: str
    state: State = State.UNKNOWN
    unschedulable: bool = False
    ready: bool = True
    annotations: dict[str, str] = field(default_factory=dict)
    driver_revision: str | None = OLD
    driver_ready: bool = True
    orphaned: bool = False
    restarts: int = 0
    install_ticks: int = 0
    crash_ticks: int | None = 0
    digest_changed: bool = True
    gpu_pods: int = 0
    jobs: int = 0
    pdb_blocks: bool = False
    drain_blocks: bool = False
    eviction_refused: bool = False
    deletion_failed: bool = False
    """A GPU pod deletion of this node was refused at least once (what may lead to a drain)."""
    validation_never: bool = False
    validator_present: bool = True
    validator_ready: bool = False
    skip: bool = False
    left: bool = False
    """No driver DaemonSet selects the node any more."""
    job_ticks_left: int = 0
    history: list[Action] = field(default_factory=list)

    def observe(self) -> NodeObservation:
        initial = self.annotations.get(INITIAL_STATE_ANNOTATION)
        wait = self.annotations.get(WAIT_START_ANNOTATION)
        validation = self.annotations.get(VALIDATION_START_ANNOTATION)
        return NodeObservation(
            name=self.name, state=self.state, unschedulable=self.unschedulable, ready=self.ready,
            initial_unschedulable=None if initial is None else initial != "false", skip=self.skip,
            upgrade_requested=self.annotations.get(UPGRADE_REQUESTED_ANNOTATION) == "true",
            safe_load_waiting=bool(self.annotations.get(SAFE_LOAD_ANNOTATION)),
            driver_pod_present=self.driver_revision is not None, driver_pod_orphaned=self.orphaned,
            driver_pod_outdated=self.driver_revision == OLD and not self.orphaned,
            config_digest_changed=self.digest_changed or self.orphaned,
            driver_pod_ready=self.driver_ready, driver_pod_failing=not self.driver_ready
            and self.restarts > DRIVER_RESTART_LIMIT,
            gpu_pods=self.gpu_pods, jobs_running=self.jobs, eviction_blocked=self.eviction_refused,
            validator_present=self.validator_present, validator_ready=self.validator_ready,
            wait_started_at=None if wait is None else float(wait),
            validation_started_at=None if validation is None else float(validation),
            failure_reason=self.annotations.get(FAILURE_ANNOTATION, ""),
        )


def writes(nodes: dict[str, SimNode], actions: list[Action]) -> list[Callable[[], None]]:
    """The API writes of a round, in the actuator's order: each pod action, then one patch per node."""
    pods = [action for action in actions if action.kind in POD_ACTIONS]
    patches: dict[str, list[Action]] = {}
    for action in actions:
        if action.kind not in POD_ACTIONS:
            patches.setdefault(action.node, []).append(action)
    ordered = [[action] for action in pods] + list(patches.values())

    def write(group: list[Action]) -> Callable[[], None]:
        def run() -> None:
            for action in group:
                apply(nodes, action)
        return run

    return [write(group) for group in ordered]


def apply(nodes: dict[str, SimNode], action: Action) -> None:
    """What the API server does with one action."""
    node = nodes.get(action.node)
    if node is None:
        return
    node.history.append(action)
    if action.kind is ActionKind.SET_STATE:
        if State(action.value) is State.DRAIN:
            node.eviction_refused = False  # the drain's evictions start afresh
        node.state = State(action.value)
    elif action.kind is ActionKind.CORDON:
        node.unschedulable = True
    elif action.kind is ActionKind.UNCORDON:
        node.unschedulable = False
    elif action.kind is ActionKind.ANNOTATE:
        key, value = action.value.split("=", 1)
        if value:
            node.annotations[key] = value
        else:
            node.annotations.pop(key, None)
    elif action.kind is ActionKind.DELETE_GPU_PODS:
        if node.pdb_blocks:
            node.eviction_refused = node.deletion_failed = True
        else:
            node.gpu_pods = 0
    elif action.kind is ActionKind.DRAIN:
        if node.drain_blocks:
            node.eviction_refused = True
        else:
            node.gpu_pods = 0
    elif action.kind is ActionKind.DELETE_DRIVER_POD:
        node.driver_revision, node.orphaned = None, False
        node.driver_ready = node.validator_ready = False


def _install(node: SimNode) -> None:
    if node.crash_ticks is None or node.restarts < node.crash_ticks:
        node.restarts += 1 if node.crash_ticks != 0 else 0
    if node.install_ticks > 0:
        node.install_ticks -= 1
    elif node.crash_ticks is not None and node.restarts >= node.crash_ticks:
        node.driver_ready = True


def tick(nodes: dict[str, SimNode]) -> None:
    """Time passes: the DaemonSet recreates deleted driver pods, drivers install or crash, validators pass."""
    for node in nodes.values():
        if node.left:
            node.driver_revision, node.orphaned, node.driver_ready, node.validator_ready = None, False, False, False
        elif node.driver_revision is None:
            node.driver_revision, node.driver_ready, node.restarts = NEW, False, 0
        elif node.driver_revision == NEW and not node.driver_ready:
            if not node.annotations.get(SAFE_LOAD_ANNOTATION):  # else blocked until the controller unblocks it
                _install(node)
        elif node.driver_revision == NEW and not node.validation_never and node.validator_present:
            node.validator_ready = True
        if node.jobs and node.job_ticks_left <= 0:
            node.jobs = 0
        node.job_ticks_left -= 1
