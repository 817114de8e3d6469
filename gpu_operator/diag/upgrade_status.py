"""`gpu-operator upgrade status`: the driver rollout as the cluster shows it, read-only.

Read from a kubeconfig: the nodes (upgrade state label, failure reason, AKS pool), the driver pods and their
DaemonSets' newest ControllerRevisions (which nodes run the newest driver), the controller's `GPUDriverUpgrade`
Events (when each node entered each state: the observed per-node time), its settings ConfigMap
(`maxParallelUpgrades`) and its status ConfigMap's `rollout` (the staged rollout's gate as it last decided: the
stages, what it waits on, a halt). Nothing is written. The report is per stage and pool: nodes by state, the
failed ones with their reason, and an estimate of the time left (gpu_operator.upgrade.progress).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


from gpu_operator.agents.controller.settings import ControllerSettings, SettingsError, parse_settings
from gpu_operator.diag.snapshot import Obj, labels, name, parse_time
from gpu_operator.readiness.driver_rollout import DRIVER_COMPONENT
from gpu_operator.render.operands.operator_controller import SETTINGS_CONFIG_MAP, SETTINGS_FILE, STATUS_CONFIG_MAP
from gpu_operator.upgrade import CLUSTER_GROUP
from gpu_operator.upgrade.observation import FAILURE_ANNOTATION, STATE_LABEL
from gpu_operator.upgrade.progress import NodeProgress, RolloutProgress, Transition, progress
from gpu_operator.upgrade.revisions import REVISION_LABEL, newest_revisions
from gpu_operator.upgrade.stages import STATUS_KEY, read_record

__all__ = [
    "DRIVER_COMPONENT",
    "EVENT_REASON",
    "UpgradeSnapshot",
    "format_progress",
    "read_upgrade",
    "upgrade_progress",
]

EVENT_REASON = "GPUDriverUpgrade"
EVENT_NAMESPACE = "default"  # where the controller records its Node events
POOL_LABEL = "kubernetes.azure.com/agentpool"
_STATE_PREFIX = "state label to "


@dataclass(frozen=True)
class UpgradeSnapshot:
    """What `read_upgrade` read (plain JSON objects); `newest`: driver DaemonSet -> its newest revision hash."""

    now: float
    nodes: Sequence[Obj] = ()
    driver_pods: Sequence[Obj] = ()
    newest: Mapping[str, str] = field(default_factory=dict)
    events: Sequence[Obj] = ()
    settings: Obj | None = None
    status: Obj | None = None


def _owner(pod: Obj) -> str:
    return next((ref.get("name", "") for ref in pod["metadata"].get("ownerReferences") or ()
                 if ref.get("kind") == "DaemonSet"), "")


def _transitions(events: Sequence[Obj]) -> list[Transition]:
    found = []
    for event in events:
        message, involved = event.get("message") or "", event.get("involvedObject") or {}
        at = parse_time(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"))
        if event.get("reason") != EVENT_REASON or involved.get("kind") != "Node" or at is None:
            continue
        state = "upgrade-failed" if message.startswith("driver upgrade failed") else \
            message.rpartition(_STATE_PREFIX)[2] if _STATE_PREFIX in message else ""
        if state:
            found.append(Transition(involved.get("name", ""), state, at.timestamp()))
    return found


def _settings(snapshot: UpgradeSnapshot, namespace: str) -> ControllerSettings | None:
    """The controller's settings as the controller itself reads them (None without a readable ConfigMap)."""
    text = ((snapshot.settings or {}).get("data") or {}).get(SETTINGS_FILE)
    try:
        return parse_settings(text, namespace) if text else None
    except SettingsError:
        return None


def _limits(settings: ControllerSettings | None) -> dict[str, int]:
    """Each driver group's maxParallelUpgrades (the controller's default, 1, without settings)."""
    if settings is None:
        return {CLUSTER_GROUP: 1}
    return {group: policy.max_parallel_upgrades for group, policy in settings.policies.items()}


def upgrade_progress(snapshot: UpgradeSnapshot) -> RolloutProgress:
    """The report of a snapshot (pure)."""
    rollout = read_record(((snapshot.status or {}).get("data") or {}).get(STATUS_KEY))
    settings = _settings(snapshot, (snapshot.settings or {}).get("metadata", {}).get("namespace", ""))
    stages = [stage for stage in rollout.get("stages") or () if isinstance(stage, Mapping)]
    stage_of = {node: str(stage.get("name", "")) for stage in stages for node in stage.get("nodes") or ()}
    pods = {pod["spec"].get("nodeName"): pod for pod in snapshot.driver_pods
            if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp")}
    nodes = []
    for node in snapshot.nodes:
        node_name, pod = name(node), pods.get(name(node))
        state = labels(node).get(STATE_LABEL, "")
        if pod is None and not state:
            continue
        current = pod is not None and labels(pod).get(REVISION_LABEL) == snapshot.newest.get(_owner(pod))
        reason = (node["metadata"].get("annotations") or {}).get(FAILURE_ANNOTATION, "")
        group = settings.group_of(labels(pod).get("app", "")) if settings and pod is not None else CLUSTER_GROUP
        nodes.append(NodeProgress(node_name, labels(node).get(POOL_LABEL, ""), stage_of.get(node_name, ""), state,
                                  current, reason, group))
    active = str(rollout.get("active") or "")
    names = [str(stage.get("name", "")) for stage in stages]
    ahead = names[names.index(active) + 1:-1] if active in names else []
    soaks = sum(float(stage.get("soakSeconds") or 0) for stage in stages if stage.get("name") in ahead)
    return progress(sorted(nodes, key=lambda n: (names.index(n.stage) if n.stage in names else len(names), n.pool,
                                                 n.name)),
                    _transitions(snapshot.events), _limits(settings), soaks,
                    str(rollout.get("waitingOn") or ""), str(rollout.get("halted") or ""), stages)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_progress(report: RolloutProgress) -> str:
    """The text `upgrade status` prints."""
    lines = [f"driver rollout: {report.settled} of {report.nodes} node(s) on their newest driver, "
             f"{len(report.failed)} failed" + (" - finished" if report.finished else "")]
    if report.halted:
        lines.append(f"HALTED: {report.halted}")
    elif report.waiting_on:
        lines.append(f"waiting on: {report.waiting_on}")
    if report.per_node_seconds is not None:
        left = "" if report.seconds_left is None or report.finished else \
            f", about {_duration(report.seconds_left)} left"
        lines.append(f"observed per node: {_duration(report.per_node_seconds)}{left}")
    elif not report.finished:
        lines.append("time left: no estimate yet (no node has finished its upgrade)")
    phases = {str(stage.get("name", "")): str(stage.get("phase", "")) for stage in report.stages}
    lines.append("")
    lines.append(f"{'STAGE':<12} {'POOL':<16} {'UPGRADED':>9}  STATES")
    for pool in report.pools:
        stage = f"{pool.stage} ({phases[pool.stage]})" if pool.stage in phases else pool.stage or "-"
        states = ", ".join(f"{state} {count}" for state, count in pool.by_state.items())
        lines.append(f"{stage:<12} {pool.pool or '-':<16} {f'{pool.settled}/{pool.nodes}':>9}  {states}")
    for node, reason in sorted(report.failed.items()):
        lines.append(f"failed: {node}: {reason or 'no reason recorded'}")
    return "\n".join(lines) + "\n"


#: What `upgrade status` reads, said when the API server refuses.
NEEDS = ("upgrade status needs list on nodes, and in the operator namespace on pods and controllerrevisions, get on "
         "configmaps, and list on events in default")


def read_upgrade(client: Any, server: str, namespace: str) -> UpgradeSnapshot:
    """Read what the report needs (list nodes, pods, controllerrevisions, events; get two ConfigMaps). A refused
    or failed read ends in a ConfigError naming it; the Events and ConfigMaps are optional (no estimate, no
    stages without them)."""
    import time

    from lightkube import ApiError
    from lightkube.resources.apps_v1 import ControllerRevision
    from lightkube.resources.core_v1 import ConfigMap, Event, Node, Pod

    from gpu_operator.diag.fetch import required

    def optional(read: Any) -> Any:
        try:
            return read()
        except ApiError:
            return None

    def config_map(map_name: str) -> Obj | None:
        found = optional(lambda: client.get(ConfigMap, map_name, namespace=namespace))
        return found.to_dict() if found is not None else None

    def listed(what: str, read: Any) -> list[Any]:
        return required(server, what, lambda: list(read()), NEEDS)

    component = dict([DRIVER_COMPONENT])
    nodes = [node.to_dict() for node in listed("nodes", lambda: client.list(Node))]  # the cluster answers
    driver_pods = [pod.to_dict() for pod in listed(f"pods in {namespace}", lambda: client.list(
        Pod, namespace=namespace, labels=component))]
    newest = newest_revisions(listed(f"controllerrevisions in {namespace}", lambda: client.list(
        ControllerRevision, namespace=namespace)))
    events = optional(lambda: [event.to_dict() for event in client.list(
        Event, namespace=EVENT_NAMESPACE, fields={"reason": EVENT_REASON})]) or []
    return UpgradeSnapshot(
        now=time.time(), nodes=nodes, driver_pods=driver_pods, newest=newest, events=events,
        settings=config_map(SETTINGS_CONFIG_MAP),
        status=config_map(STATUS_CONFIG_MAP),
    )
