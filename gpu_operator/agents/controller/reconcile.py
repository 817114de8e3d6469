"""One reconcile, as a pure function: the cluster's facts in, the writes that bring it to the config out.

Two concerns meet on the Node object and are planned together so that each node gets at most one merge patch
per round:

* node labelling (`gpu_operator.labels`): NVIDIA's deploy labels, `gpu.present` and the MIG layout seed, the
  driver owner label (`.driver_owners`), plus the `nvidia.com/gpu-driver-upgrade-enabled` annotation the driver
  manager reads;
* the driver upgrade (`gpu_operator.upgrade`): each managed node's step, with NVIDIA's state labels. As NVIDIA's
  BuildState, the managed nodes are those with a driver pod (owned by a driver DaemonSet, or by nobody), a node
  whose driver pod is not bound yet sits the round out, and no upgrade step is taken while a driver DaemonSet has
  fewer pods than nodes it should run on (a pod being recreated): so a node found without a driver pod has
  lost it for good, and leaves the upgrade.

With a staged rollout (`ControllerSettings.rollout`), the gate (:mod:`.rollout`) decides which nodes the upgrade
may admit this round; every other node waiting at `upgrade-required` is read as skipped, and a node in progress
finishes. The plan carries the decision, which the loop publishes and keeps for the next round.

The plan's pod actions (evict a node's GPU pods, drain it, delete its old driver pod) run before that node's
patch, so a state is written only after the step it records was done. The plan also says which nodes' pods the
next round must look at (they are not watched: a fleet's pods are far more than its nodes), which nodes' GPU claims
the labeller needs, and when to come back without an event: soon while pods are being evicted or a driver
DaemonSet is short of pods, at the nearest deadline while a timeout runs, while a DRA plugin's label waits for
claims to go, else at the resync.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.controller.cluster_state import ClusterState, DaemonSetFacts, NodeFacts, PodFacts
from gpu_operator.agents.controller.driver_owners import owner_change
from gpu_operator.agents.controller.rollout import decide
from gpu_operator.agents.controller.settings import ControllerSettings, PodStepOptions
from gpu_operator.labels import DRA_DRIVER_LABEL, label_changes
from gpu_operator.remediation import NodePatch, blocks_upgrade
from gpu_operator.upgrade import CLUSTER_GROUP, STATE_LABEL, Action, NodeObservation, State, UpgradePolicy, plan_groups
from gpu_operator.upgrade.stages import StageDecision, gate
from gpu_operator.upgrade.observation import (
    DRIVER_RESTART_LIMIT,
    FAILURE_ANNOTATION,
    INITIAL_STATE_ANNOTATION,
    SAFE_LOAD_ANNOTATION,
    SKIP_LABEL,
    UPGRADE_REQUESTED_ANNOTATION,
    VALIDATION_START_ANNOTATION,
    WAIT_START_ANNOTATION,
    ActionKind,
)

__all__ = [
    "ALERTS_POLL_SECONDS",
    "ALERTS_RETRY_SECONDS",
    "UPGRADE_ENABLED_ANNOTATION",
    "NodePatch",
    "Plan",
    "PodAction",
    "UpgradeEvent",
    "node_groups",
    "nodes_needing_claims",
    "nodes_needing_pods",
    "observe",
    "reconcile",
    "unscheduled_driver_daemonsets",
]

UPGRADE_ENABLED_ANNOTATION = "nvidia.com/gpu-driver-upgrade-enabled"
#: The steps whose progress depends on pods nobody watches: the next round queries them and comes back soon.
POD_STEPS = frozenset({State.WAIT_FOR_JOBS, State.POD_DELETION, State.DRAIN})
POD_STEP_REQUEUE_SECONDS = 2.0
#: While a driver DaemonSet is short of pods (BuildState's error: controller-runtime retries it with backoff).
UNSCHEDULED_REQUEUE_SECONDS = 5.0
#: While a DRA plugin's label waits for GPU claims to go (NVIDIA's requeue is the backstop of pod events).
CLAIMS_REQUEUE_SECONDS = 30.0
#: While a passed soak waits for the alerts to be readable again.
ALERTS_RETRY_SECONDS = 15.0
#: While a soak watches alerts: how often a round asks whether one fires.
ALERTS_POLL_SECONDS = 30.0
_KNOWN_STATES = {state.value: state for state in State}


@dataclass(frozen=True)
class PodAction:
    """`evict-gpu-pods` or `drain` (node), or `delete` of the named driver pod; `group`: the node's driver group,
    whose upgrade policy says how its pods are treated (`ControllerSettings.steps_of`)."""

    kind: str
    node: str
    pod: str = ""
    group: str = CLUSTER_GROUP


@dataclass(frozen=True)
class UpgradeEvent:
    """A state change of one node, reported as a Kubernetes Event on the Node (reason `GPUDriverUpgrade`)."""

    node: str
    state: str
    message: str
    warning: bool = False


@dataclass(frozen=True)
class Plan:
    pod_actions: tuple[PodAction, ...] = ()
    patches: tuple[NodePatch, ...] = ()
    events: tuple[UpgradeEvent, ...] = ()
    requeue_after: float = 0.0
    observations: tuple[NodeObservation, ...] = ()
    paused_by: tuple[str, ...] = ()
    """The driver DaemonSets with unscheduled pods, for which this round took no upgrade step."""
    rollout: StageDecision | None = None
    """The staged rollout's decision this round (None without a staged rollout)."""


def _state_of(node: NodeFacts) -> State | None:
    return _KNOWN_STATES.get(node.labels.get(STATE_LABEL, ""))


def _time(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _initial(node: NodeFacts) -> bool | None:
    """NVIDIA's initial-state annotation: its presence means cordoned before (NVIDIA writes only `true`); the
    explicit `false` an older release of ours wrote means schedulable."""
    value = node.annotations.get(INITIAL_STATE_ANNOTATION)
    return None if value is None else value != "false"


def nodes_needing_pods(state: ClusterState) -> list[str]:
    """The nodes at a step that counts their pods (wait for jobs, GPU pod deletion, drain)."""
    return sorted(name for name, node in state.nodes.items() if _state_of(node) in POD_STEPS)


def nodes_needing_claims(state: ClusterState, settings: ControllerSettings) -> list[str]:
    """The GPU nodes whose labelling would remove the DRA plugin's label: the loop says which of them still have
    pods holding GPU claims (`ClusterState.gpu_claim_nodes`)."""
    return sorted(name for name, node in state.nodes.items() if DRA_DRIVER_LABEL in node.labels
                  and label_changes(node.labels, settings.labelling).get(DRA_DRIVER_LABEL, "") is None)


def node_groups(state: ClusterState, settings: ControllerSettings) -> dict[str, str]:
    """The driver group of each node with a driver pod (its pod steps follow that group's upgrade policy)."""
    return {node: settings.group_of(pod.app) for node, pod in _driver_pods(state, settings)[0].items()}


def _driver_sets(state: ClusterState, settings: ControllerSettings) -> frozenset[str]:
    return frozenset(name for name, ds in state.daemonsets.items() if ds.app in settings.driver_apps)


def unscheduled_driver_daemonsets(state: ClusterState, settings: ControllerSettings) -> tuple[str, ...]:
    """The driver DaemonSets whose scheduled pods are fewer or more than `desiredNumberScheduled` (BuildState:
    "driver DaemonSet should not have Unscheduled pods"): a pod is being created, bound or deleted, so no upgrade
    step now. A pod not yet bound to its node counts as unscheduled: its node sits the round out, and admitting
    another node meanwhile could exceed maxParallelUpgrades, since the node in the gap is counted nowhere."""
    apps = settings.driver_apps
    owned = Counter(pod.owner for pod in state.pods if pod.app in apps and pod.owner and pod.node)
    return tuple(sorted(name for name in _driver_sets(state, settings)
                        if state.daemonsets[name].desired != owned[name]))


def _foreign(pod: PodFacts, daemonsets: Mapping[str, DaemonSetFacts], apps: frozenset[str]) -> bool:
    """The pod's owner is a DaemonSet whose own `app` label says it is not a driver's."""
    owner = daemonsets.get(pod.owner)
    return owner is not None and owner.app != "" and owner.app not in apps


def _driver_pods(state: ClusterState, settings: ControllerSettings) -> tuple[dict[str, PodFacts], set[str]]:
    """The driver pod of each node (a live one before one terminating), and the nodes that sit this round out:
    targeted by a pod not bound yet, or running one owned by a DaemonSet that is not a driver's (NVIDIA's
    BuildState leaves both out)."""
    chosen: dict[str, PodFacts] = {}
    sitting_out: set[str] = set()
    apps = settings.driver_apps
    for pod in state.pods:
        if pod.app not in apps or not (pod.node or pod.target_node):
            continue
        if not pod.node or _foreign(pod, state.daemonsets, apps):
            sitting_out.add(pod.node or pod.target_node)
        elif pod.node not in chosen or (chosen[pod.node].terminating and not pod.terminating):
            chosen[pod.node] = pod
    return chosen, sitting_out - chosen.keys()


def _outdated(pod: PodFacts, daemonsets: Mapping[str, DaemonSetFacts]) -> tuple[bool, bool]:
    """(driver pod outdated, its config digest changed) against its DaemonSet's newest revision."""
    owner = daemonsets.get(pod.owner)
    if owner is None or not owner.revision or not pod.revision:
        return False, True
    return pod.revision != owner.revision, not pod.digest or pod.digest != owner.digest


def _blocked(state: ClusterState, name: str, step: State | None, steps: PodStepOptions,
             now: float) -> tuple[bool, str]:
    """(the node's evictions are blocked for good, why): a refused pod at once; past the step's timeout, counted
    from its first eviction (kubectl drain.Helper's global timeout), whatever it still waits for."""
    if step not in (State.POD_DELETION, State.DRAIN):
        return False, ""
    if name in state.eviction_refusals:
        return True, state.eviction_refusals[name]
    since = state.eviction_blocked_since.get(name)
    limit = (steps.pod_deletion if step is State.POD_DELETION else steps.drain).timeout
    # timeoutSeconds 0 waits forever, as kubectl's drain helper (and so NVIDIA's pod and drain managers) does
    expired = since is not None and limit > 0 and now - since >= limit
    waited = state.eviction_waiting_for.get(name, "")
    return expired, (f"{waited} after {limit:g}s (upgradePolicy.{'podDeletion' if step is State.POD_DELETION else 'drain'}"
                     ".timeoutSeconds)" if expired and waited else "")


def _driver_facts(driver: PodFacts | None, daemonsets: Mapping[str, DaemonSetFacts]) -> dict[str, bool]:
    """The NodeObservation fields of the node's driver pod."""
    if driver is None:
        return {"driver_pod_present": False}
    outdated, digest_changed = (False, True) if driver.orphaned else _outdated(driver, daemonsets)
    return {"driver_pod_terminating": driver.terminating, "driver_pod_orphaned": driver.orphaned,
            "driver_pod_outdated": outdated, "config_digest_changed": digest_changed,
            "driver_pod_ready": driver.running_ready, "driver_pod_failing": driver.restarts > DRIVER_RESTART_LIMIT}


def observe(state: ClusterState, settings: ControllerSettings, now: float,
            drivers: tuple[Mapping[str, PodFacts], set[str]] | None = None) -> list[NodeObservation]:
    """The nodes as the upgrade planner sees them: those with a driver pod (managed), and those with an upgrade
    state but no driver pod (to leave the upgrade)."""
    chosen, sitting_out = _driver_pods(state, settings) if drivers is None else drivers
    validators = [pod for pod in state.pods if pod.app in settings.validator_apps and not pod.terminating]
    present = {pod.node for pod in validators}
    validated = {pod.node for pod in validators if pod.ready}
    observations = []
    for name, node in sorted(state.nodes.items()):
        step = _state_of(node)
        driver = chosen.get(name)
        if step is None or name in sitting_out or (driver is None and step is State.UNKNOWN):
            continue  # not managed, a state another tool owns (node-maintenance-required, ...), or sitting out
        pods = state.node_pods.get(name)
        counted = 0 if pods is None else (pods.drainable if step is State.DRAIN else pods.gpu_pods)
        group = settings.group_of(driver.app) if driver is not None else CLUSTER_GROUP
        blocked, reason = _blocked(state, name, step, settings.steps_of(group), now)
        notes = node.annotations
        observations.append(NodeObservation(
            name=name, state=step, unschedulable=node.unschedulable, ready=node.ready,
            initial_unschedulable=_initial(node),
            skip=node.labels.get(SKIP_LABEL) == "true" or name in state.remediation_holds
            or blocks_upgrade(node.labels),
            upgrade_requested=notes.get(UPGRADE_REQUESTED_ANNOTATION) == "true",
            safe_load_waiting=bool(notes.get(SAFE_LOAD_ANNOTATION)), **_driver_facts(driver, state.daemonsets),
            gpu_pods=counted, jobs_running=0 if pods is None else pods.jobs_running,
            eviction_blocked=blocked, block_reason=reason, validator_present=name in present,
            validator_ready=name in validated, wait_started_at=_time(notes.get(WAIT_START_ANNOTATION)),
            validation_started_at=_time(notes.get(VALIDATION_START_ANNOTATION)),
            failure_reason=notes.get(FAILURE_ANNOTATION, ""),
        ))
    return observations


def _labelling(node: NodeFacts, settings: ControllerSettings, policy: UpgradePolicy,
              claims_held: bool) -> tuple[dict[str, str | None], dict[str, str | None]]:
    labels = {**label_changes(node.labels, settings.labelling, gpu_claims_held=claims_held),
              **owner_change(node.labels, settings.driver_owners)}
    after_present = labels.get("nvidia.com/gpu.present", node.labels.get("nvidia.com/gpu.present"))
    wanted = settings.driver_enabled and policy.auto_upgrade and after_present == "true"
    annotations: dict[str, str | None] = {}
    if wanted and node.annotations.get(UPGRADE_ENABLED_ANNOTATION) != "true":
        annotations[UPGRADE_ENABLED_ANNOTATION] = "true"
    elif not wanted and UPGRADE_ENABLED_ANNOTATION in node.annotations:
        annotations[UPGRADE_ENABLED_ANNOTATION] = None
    if not policy.auto_upgrade and node.labels.get(STATE_LABEL):
        labels[STATE_LABEL] = None  # NVIDIA drops the state labels while upgrades are off
    return labels, annotations


def _event(node: str, before: State | None, after: State, reason: str) -> UpgradeEvent | None:
    if before is after:
        return None
    if after is State.FAILED:
        return UpgradeEvent(node, after.value, f"driver upgrade failed: {reason}", warning=True)
    if after is State.UNKNOWN:
        return UpgradeEvent(node, after.value, "left the driver upgrade: no driver pod runs on the node any more")
    return UpgradeEvent(node, after.value, f"Successfully updated node state label to {after.value}")


def _by_node(actions: Sequence[Action]) -> dict[str, list[Action]]:
    by_node: dict[str, list[Action]] = {}
    for action in actions:
        by_node.setdefault(action.node, []).append(action)
    return by_node


_POD_ACTIONS = {ActionKind.DELETE_GPU_PODS: "evict-gpu-pods", ActionKind.DRAIN: "drain",
                ActionKind.DELETE_DRIVER_POD: "delete"}


def _node_plan(node: NodeFacts, actions: Sequence[Action], settings: ControllerSettings, driver: PodFacts | None,
               claims_held: bool) -> tuple[list[PodAction], NodePatch | None, UpgradeEvent | None]:
    group = settings.group_of(driver.app) if driver is not None else CLUSTER_GROUP
    policy = settings.policies[group]
    labels, annotations = _labelling(node, settings, policy, claims_held)
    unschedulable: bool | None = None
    pod_actions: list[PodAction] = []
    new_state: State | None = None
    reason = ""
    for action in actions:
        if action.kind in _POD_ACTIONS:
            pod_actions.append(PodAction(_POD_ACTIONS[action.kind], node.name,
                                         driver.name if driver and action.kind is ActionKind.DELETE_DRIVER_POD else "",
                                         group))
        elif action.kind is ActionKind.SET_STATE:
            new_state = State(action.value)
            labels[STATE_LABEL] = action.value or None
        elif action.kind is ActionKind.ANNOTATE:
            key, _, value = action.value.partition("=")
            annotations[key] = value or None
            reason = value if key == FAILURE_ANNOTATION else reason
        else:
            unschedulable = action.kind is ActionKind.CORDON
    changed = bool(labels or annotations) or unschedulable is not None
    patch = NodePatch(node.name, labels, annotations, unschedulable) if changed else None
    event = _event(node.name, _state_of(node), new_state, reason) if new_state is not None else None
    return pod_actions, patch, event


def _requeue(observations: Sequence[NodeObservation], settings: ControllerSettings, now: float) -> float:
    wait = settings.resync_seconds
    timeout = settings.upgrade.validation_timeout_seconds
    for node in observations:
        if node.state in POD_STEPS:
            wait = min(wait, POD_STEP_REQUEUE_SECONDS)
        elif node.state is State.VALIDATION and node.validation_started_at is not None and timeout:
            deadline = node.validation_started_at + timeout
            wait = min(wait, max(deadline - now, 0.0) + 1.0)
    return wait


def _plan(state: ClusterState, observations: Sequence[NodeObservation], drivers: Mapping[str, PodFacts],
          settings: ControllerSettings, paused: Sequence[str], now: float) -> list[Action]:
    """Each driver group's nodes planned within its own upgrade policy; a group with a DaemonSet short of pods
    (`paused`) takes no step. A node without a driver pod (leaving the upgrade) is the cluster driver's."""
    grouped = [(settings.group_of(drivers[node.name].app) if node.name in drivers else CLUSTER_GROUP, node)
               for node in observations]
    held = {settings.group_of(state.daemonsets[name].app) for name in paused}
    return plan_groups(grouped, settings.policies, now, held)


def reconcile(state: ClusterState, settings: ControllerSettings, now: float) -> Plan:
    """Every write of this round, and when to look again."""
    drivers = _driver_pods(state, settings)
    observations = observe(state, settings, now, drivers)
    paused = unscheduled_driver_daemonsets(state, settings)
    rollout = decide(state, settings, observations, now)
    admitted = observations if rollout is None else gate(observations, rollout)
    by_node = _by_node(_plan(state, admitted, drivers[0], settings, paused, now))
    pod_actions: list[PodAction] = []
    patches: list[NodePatch] = []
    events: list[UpgradeEvent] = []
    for name, node in sorted(state.nodes.items()):
        claims_held = name in state.gpu_claim_nodes
        node_pod_actions, patch, event = _node_plan(node, by_node.get(name, ()), settings, drivers[0].get(name),
                                                    claims_held)
        # The planner never records a state in the round of a pod action (the next round sees its effect), so
        # a patch beside pod actions carries labelling only; the actuator runs pod actions first all the same.
        pod_actions += node_pod_actions
        patches += [patch] if patch is not None else []
        events += [event] if event is not None else []
    requeue = _requeue(observations, settings, now)
    if paused:
        requeue = min(requeue, UNSCHEDULED_REQUEUE_SECONDS)
    if state.gpu_claim_nodes and state.gpu_claim_nodes & set(nodes_needing_claims(state, settings)):
        requeue = min(requeue, CLAIMS_REQUEUE_SECONDS)
    if rollout is not None:
        requeue = min(requeue, _soak_requeue(rollout, bool(settings.rollout and settings.rollout.alerts), now))
    return Plan(tuple(pod_actions), tuple(patches), tuple(events), requeue, tuple(observations), paused, rollout)


def _soak_requeue(rollout: StageDecision, alerts: bool, now: float) -> float:
    """Come back when a stage's soak ends (a soak that cannot end yet for want of the alerts: soon), and while a
    soak watches alerts, often enough to see one that fires and clears before the soak ends (nothing else wakes
    the controller for an alert)."""
    ends = [stage.soak_until for stage in rollout.stages if stage.phase == "soaking" and stage.soak_until]
    waits = [end - now + 1.0 if end > now else ALERTS_RETRY_SECONDS for end in ends]
    return min([*waits, *([ALERTS_POLL_SECONDS] if ends and alerts else [])], default=float("inf"))
