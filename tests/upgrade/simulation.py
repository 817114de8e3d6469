"""A simulated cluster for the upgrade planner: nodes, their pods, and how the API and kubelet answer actions."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_operator.upgrade import Action, NodeObservation, State
from gpu_operator.upgrade.state_machine import (
    ActionKind,
    INITIAL_STATE_ANNOTATION,
    VALIDATION_START_ANNOTATION,
    WAIT_START_ANNOTATION,
)

NEW, OLD = "new", "old"


@dataclass
class SimNode:
    name: str
    state: State = State.UNKNOWN
    unschedulable: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    driver_revision: str | None = OLD
    digest_changed: bool = True
    gpu_pods: int = 0
    jobs: int = 0
    pdb_blocks: bool = False
    eviction_refused: bool = False
    validation_never: bool = False
    validator_ready: bool = False
    skip: bool = False
    job_ticks_left: int = 0
    history: list[Action] = field(default_factory=list)

    def observe(self) -> NodeObservation:
        initial = self.annotations.get(INITIAL_STATE_ANNOTATION)
        wait = self.annotations.get(WAIT_START_ANNOTATION)
        validation = self.annotations.get(VALIDATION_START_ANNOTATION)
        return NodeObservation(
            name=self.name, state=self.state, unschedulable=self.unschedulable,
            initial_unschedulable=None if initial is None else initial == "true", skip=self.skip,
            driver_pod_present=self.driver_revision is not None,
            driver_pod_outdated=self.driver_revision == OLD, config_digest_changed=self.digest_changed,
            gpu_pods=self.gpu_pods, jobs_running=self.jobs, eviction_blocked=self.eviction_refused,
            validator_ready=self.validator_ready,
            wait_started_at=None if wait is None else float(wait),
            validation_started_at=None if validation is None else float(validation),
        )


def apply(nodes: dict[str, SimNode], action: Action) -> None:
    """What the API server does with one action."""
    node = nodes.get(action.node)
    if node is None:
        return
    node.history.append(action)
    if action.kind is ActionKind.SET_STATE:
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
    elif action.kind in (ActionKind.DELETE_GPU_PODS, ActionKind.DRAIN):
        if node.pdb_blocks:
            node.eviction_refused = True
        else:
            node.gpu_pods = 0
    elif action.kind is ActionKind.DELETE_DRIVER_POD:
        node.driver_revision = None
        node.validator_ready = False


def tick(nodes: dict[str, SimNode]) -> None:
    """Time passes: the DaemonSet recreates deleted driver pods, validators pass, jobs finish."""
    for node in nodes.values():
        if node.driver_revision is None:
            node.driver_revision = NEW
        elif node.driver_revision == NEW and not node.validation_never:
            node.validator_ready = True
        if node.jobs and node.job_ticks_left <= 0:
            node.jobs = 0
        node.job_ticks_left -= 1
