"""The controller's loop: watches wake it, the pure reconcile decides, the actuator writes, the status follows.

A round starts when a watched object changes (Nodes; the driver and validator pods, DaemonSets and
ControllerRevisions of the operator's namespace) or when the plan's requeue time comes (while pods are being
evicted, at a timeout's deadline, else at the resync). Events arriving during a round are batched into the next.

The API server may throttle, restart or stall at any time, so each write is an action of its own: one that still
fails after the client's retries (:mod:`gpu_operator.agents.kube.transport`) is logged with its reason, counted in
`gpu_operator_controller_failed_actions_total`, and the round goes on with the others; the next round plans it
again from what the API then says (the API's state is always the truth a round starts from). A node whose pods
could not be counted is left alone for the round, so a failed read never looks like "no pods left". Two things
end a round early: the fence (this replica no longer holds its Lease within the renew deadline: nothing more is
written, and no round starts until the Lease is renewed or lost) and the stop event (SIGTERM: the action under
way finishes, the rest are abandoned). Only a bug raises out of a round with a traceback.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx2
from lightkube import Client, operators
from lightkube.models.core_v1 import EventSource, ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import ConfigMap, Event, Node, Pod

from gpu_operator.agents.controller.actuator import Actuator
from gpu_operator.agents.controller.cluster_state import (
    ClusterState,
    DaemonSetFacts,
    NodePods,
    daemonset_facts,
    node_facts,
    pod_facts,
)
from gpu_operator.agents.controller.informer import Informer, warm_decoders
from gpu_operator.agents.controller.metrics import OPERATOR_ERROR, ControllerMetrics
from gpu_operator.agents.controller.reconcile import (
    Plan,
    UpgradeEvent,
    nodes_needing_claims,
    node_groups,
    nodes_needing_pods,
    reconcile,
)
from gpu_operator.agents.controller.alerts import AlertSource
from gpu_operator.agents.controller.rollout import RolloutSeen, rollout_notices
from gpu_operator.agents.cloud import aks_hand_off
from gpu_operator.agents.controller.remediation import Remediator
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.controller.status import STATUS_CONFIG_MAP, census, operand_status, status_data
from gpu_operator.agents.kube.errors import KubeError, NotFound, NotLeader, kube_error
from gpu_operator.remediation import NodeStep
from gpu_operator.upgrade import CLUSTER_GROUP
from gpu_operator.upgrade.revisions import newest_revisions
from gpu_operator.upgrade.stages import STATUS_KEY, RolloutMemory, StageDecision, read_record

__all__ = ["DECODED", "EVENT_NAMESPACE", "ControllerLoop"]

_LOG = logging.getLogger(__name__)
_DEBOUNCE_SECONDS = 0.1
_FENCED_RECHECK_SECONDS = 0.5
_SYNC_REPORT_SECONDS = 60.0
_COMPONENT = "gpu-operator-controller"
_REMEDIATION_COMPONENT = "gpu-operator-remediation"
#: Events of a cluster-scoped object (a Node) live in `default`, as the kubelet's and NVIDIA's do: the API server
#: accepts a Node's event in no other namespace.
EVENT_NAMESPACE = "default"
#: Every type the controller's threads decode (see informer.warm_decoders).
DECODED = (Node, Pod, DaemonSet, ControllerRevision, ConfigMap, Event, Lease, Pod.Eviction)
#: What an API call may raise once the client has retried: lightkube's and httpx's errors, or ours.
API_ERRORS = (httpx2.HTTPError, KubeError)


def _failure(error: Exception) -> KubeError:
    return kube_error(error) if isinstance(error, httpx2.HTTPError) else error  # type: ignore[return-value]


class ControllerLoop:
    def __init__(self, client: Client, settings: ControllerSettings, metrics: ControllerMetrics, *,
                 clock: Callable[[], float] = time.time, stop: threading.Event | None = None,
                 cloud: object = None) -> None:
        self._client, self._settings, self._metrics, self._clock = client, settings, metrics, clock
        self.stop = stop or threading.Event()
        self.wake = threading.Event()
        ns, resync = settings.namespace, settings.resync_seconds
        apps = operators.in_([*sorted(settings.driver_apps), *settings.validator_apps])
        self._nodes = Informer(client, Node, self.wake, resync_seconds=resync)
        self._pods = Informer(client, Pod, self.wake, namespace=ns, labels={"app": apps}, resync_seconds=resync)
        self._daemonsets = Informer(client, DaemonSet, self.wake, namespace=ns, resync_seconds=resync)
        self._revisions = Informer(client, ControllerRevision, self.wake, namespace=ns, resync_seconds=resync)
        self._informers = (self._nodes, self._pods, self._daemonsets, self._revisions)
        steps = settings.steps
        self.actuator = Actuator(client, ns, wait_selector=steps.wait_pod_selector,
                                 pod_deletion=steps.pod_deletion, drain=steps.drain, clock=clock)
        self.remediator = Remediator(client, settings.remediation, ns, validator_apps=settings.validator_apps,
                                     pods_on=self.actuator.pods_on, patch_node=self.actuator.patch_node, clock=clock,
                                     cloud=cloud, hand_off=aks_hand_off)
        self.alerts = AlertSource(settings.prometheus_url) if settings.rollout and settings.rollout.alerts else None
        self._rollout: RolloutSeen | None = None
        """What the last decision told (read back from the published one at the first round)."""
        self._rollout_memory: RolloutMemory | None = None
        """The staged rollout's memory: read from the status ConfigMap on the first round, then each plan's."""
        self._status: dict[str, str] | None = None
        self._status_written = 0.0
        self._uncounted: set[str] = set()
        self.rounds = 0
        self.last_round = time.monotonic()

    def start(self) -> bool:
        """Start the watches one after the other, each once the one before has listed; however long the API
        server takes (each informer retries on its own), until `stop`. True once all are synced."""
        warm_decoders(DECODED)
        for informer in self._informers:
            informer.start()
            waited = 0.0
            while not informer.synced.wait(_SYNC_REPORT_SECONDS / 4):
                if self.stop.is_set():
                    return False
                waited += _SYNC_REPORT_SECONDS / 4
                if waited % _SYNC_REPORT_SECONDS == 0:
                    _LOG.warning("the watch of %s has not listed after %.0f s; still trying", informer.name, waited)
        return True

    def close(self) -> None:
        for informer in self._informers:
            informer.stop()
        self.remediator.close()
        if self.alerts is not None:
            self.alerts.close()

    # --- one round ----------------------------------------------------------------------------------------------

    def _count_pods(self, nodes: Iterable[str], groups: Mapping[str, str]) -> dict[str, NodePods]:
        counts, self._uncounted = {}, set()
        for node in nodes:
            try:
                steps = self._settings.steps_of(groups.get(node, CLUSTER_GROUP))
                counts[node] = self.actuator.count_pods([node], steps)[node]
            except API_ERRORS as error:
                self._uncounted.add(node)
                self._metrics.failed_actions.labels("count-pods").inc()
                _LOG.warning("could not read the pods of node %s (%s): leaving it as it is this round", node,
                             _failure(error))
        return counts

    def state(self) -> ClusterState:
        revisions = newest_revisions(self._revisions.items())
        daemonsets: dict[str, DaemonSetFacts] = {
            ds.metadata.name: daemonset_facts(ds, revisions.get(ds.metadata.name, "")) for ds in self._daemonsets.items()
        }
        nodes = {facts.name: facts for facts in map(node_facts, self._nodes.items())}
        state = ClusterState(nodes=nodes, pods=tuple(map(pod_facts, self._pods.items())), daemonsets=daemonsets)
        needing = nodes_needing_pods(state)
        self.actuator.forget(needing)
        return ClusterState(
            nodes, state.pods, daemonsets,
            self._count_pods(needing, node_groups(state, self._settings) if needing else {}),
            eviction_blocked_since=dict(self.actuator.blocked_since), eviction_refusals=dict(self.actuator.refusals),
            eviction_waiting_for=dict(self.actuator.waiting_for),
            gpu_claim_nodes=self._claim_nodes(nodes_needing_claims(state, self._settings)))

    def _claim_nodes(self, nodes: Iterable[str]) -> frozenset[str]:
        """Of `nodes`, those where a pod holds a GPU claim of NVIDIA's DRA driver; a node whose pods cannot be
        read counts as holding one (its DRA plugin label stays until the next round can tell)."""
        holding: set[str] = set()
        for node in nodes:
            try:
                holding |= self.actuator.gpu_claim_nodes(node)
            except API_ERRORS as error:
                holding.add(node)
                _LOG.warning("could not read the GPU claims on node %s (%s): keeping its DRA plugin label for now",
                             node, _failure(error))
        return frozenset(holding)

    def _act(self, kind: str, node: str, action: Callable[[], object]) -> bool:
        """One write; False when it failed (logged and counted). NotLeader ends the round."""
        if self.stop.is_set():
            return False
        try:
            action()
        except NotLeader:
            raise
        except API_ERRORS as error:
            self._metrics.failed_actions.labels(kind).inc()
            _LOG.warning("%s on node %s failed: %s; the next round tries again", kind, node, _failure(error))
            return False
        return True

    def round(self) -> Plan:
        """One reconcile: observe, plan, write; returns the plan (the writes of uncounted nodes left out)."""
        started = time.monotonic()
        now = self._clock()
        state = self.state()
        nodes, pods = self._nodes.items(), self._pods.items()
        remediation = self.remediator.plan(nodes, pods, now)
        # planned first, so that a node it takes this round is not admitted to an upgrade in the same round
        plan = reconcile(dataclasses.replace(state, remediation_holds=self.remediator.holds(remediation),
                                             **self._rollout_inputs(remediation.steps)), self._settings, now)
        self.remediator.carry_out(remediation, nodes, self._act)
        for event in remediation.events:
            self._event(UpgradeEvent(event.node, "", event.message, event.warning), now, reason=event.reason,
                        component=_REMEDIATION_COMPONENT)
        skipped = self._uncounted
        for action in (a for a in plan.pod_actions if a.node not in skipped):
            steps = self._settings.steps_of(action.group)
            if self._act(action.kind, action.node,
                         lambda action=action, steps=steps: self.actuator.run_pod_action(action, steps)):
                self._metrics.writes.labels(action.kind).inc()
        for patch in (p for p in plan.patches if p.node not in skipped):
            patched: list[bool] = []
            if self._act("node-patch", patch.node, lambda patch=patch: patched.append(self.actuator.patch_node(patch))) \
                    and patched[0]:
                self._metrics.writes.labels("node-patch").inc()
        for event in (e for e in plan.events if e.node not in skipped):
            self._event(event, now)
        if self.stop.is_set():
            return plan
        self._announce(plan.rollout, now)
        operands = operand_status(state.daemonsets.values())
        summary = census(state, plan.observations, self._settings.upgrade.max_parallel_upgrades, operands)
        held_back = self._write_status(status_data(state, summary, operands, remediation.steps, plan.rollout))
        if held_back:  # the newest status waits for its interval: a round then writes it, events or not
            plan = dataclasses.replace(plan, requeue_after=min(plan.requeue_after, held_back))
        self._metrics.record(summary, self._settings.upgrade.auto_upgrade, now)
        self._metrics.record_remediation(remediation)
        self._metrics.record_rollout(plan.rollout, now)
        self._metrics.duration.observe(time.monotonic() - started)
        self.rounds += 1
        self.last_round = time.monotonic()
        return plan

    # --- the staged rollout -------------------------------------------------------------------------------------

    def _rollout_inputs(self, steps: Iterable[NodeStep]) -> dict[str, Any]:
        """The staged rollout gate's inputs (none without a rollout): its memory, the nodes' GPU faults, the
        firing alerts."""
        if self._settings.rollout is None:
            return {}
        if self._rollout_memory is None:
            self._rollout_memory = self._published_memory()
        faults: dict[str, set[str]] = {}
        for step in steps:
            if step.fault_class:
                faults.setdefault(step.node, set()).add(step.fault_class)
        firing = self.alerts.firing() if self.alerts is not None else frozenset()
        return {"rollout_memory": self._rollout_memory, "firing_alerts": firing,
                "node_faults": {node: frozenset(classes) for node, classes in faults.items()}}

    def _published_memory(self) -> RolloutMemory:
        """The memory the last leader published (none when the ConfigMap or its record cannot be read)."""
        try:
            status = self._client.get(ConfigMap, STATUS_CONFIG_MAP, namespace=self._settings.namespace)
        except API_ERRORS as error:
            _LOG.info("no staged rollout record to carry on from (%s): the gate starts afresh", _failure(error))
            return RolloutMemory()
        record = read_record((status.data or {}).get(STATUS_KEY))
        self._rollout = RolloutSeen.from_record(record)
        return RolloutMemory.from_dict(record.get("memory"))

    def _announce(self, decision: StageDecision | None, now: float) -> None:
        """Events for what the rollout did this round (a halt, a stage started, the end), on the status ConfigMap."""
        for notice in rollout_notices(self._rollout, decision):
            _LOG.log(logging.WARNING if notice.warning else logging.INFO, "%s", notice.message)
            self._event(UpgradeEvent("", "", notice.message, notice.warning), now, reason=notice.reason,
                        involved=ObjectReference(kind="ConfigMap", name=STATUS_CONFIG_MAP, apiVersion="v1",
                                                 namespace=self._settings.namespace))
        if decision is not None:
            self._rollout, self._rollout_memory = RolloutSeen.of(decision), decision.memory

    def _event(self, event: UpgradeEvent, now: float, *, reason: str = "GPUDriverUpgrade",
               component: str = _COMPONENT, involved: ObjectReference | None = None) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        involved = involved or ObjectReference(kind="Node", name=event.node, apiVersion="v1")
        body = Event(
            metadata=ObjectMeta(generateName=f"{involved.name}.", namespace=involved.namespace or EVENT_NAMESPACE),
            involvedObject=involved,
            reason=reason, message=event.message, type="Warning" if event.warning else "Normal",
            source=EventSource(component=component), firstTimestamp=stamp, lastTimestamp=stamp, count=1,
        )
        # an event is a report: losing one must not stop the upgrade
        if self._act("event", involved.name, lambda: self._client.create(body)):
            self._metrics.writes.labels("event").inc()

    def _write_status(self, data: dict[str, str], min_interval: float = 5.0) -> float:
        """Write the status ConfigMap at most every `min_interval` seconds; the seconds until a held-back status
        may be written (0: written, unchanged, or failed: the next round tries again)."""
        if data == self._status:
            return 0.0
        since = time.monotonic() - self._status_written
        if self._status and since < min_interval:
            return min_interval - since
        body = ConfigMap(metadata=ObjectMeta(name=STATUS_CONFIG_MAP, namespace=self._settings.namespace,
                                             labels={"app": "gpu-operator"}), data=data)

        def write() -> None:
            try:
                self._client.replace(body)
            except httpx2.HTTPError as error:
                if not isinstance(kube_error(error), NotFound):
                    raise
                self._client.create(body)

        if self._act("status", "-", write):
            self._metrics.writes.labels("status").inc()
            self._status, self._status_written = data, time.monotonic()
        return 0.0

    # --- the loop -----------------------------------------------------------------------------------------------

    def run(self, leading: Callable[[], bool] = lambda: True) -> None:
        """Reconcile until `stop` is set: on every wake, or when the last plan asked to come back; while
        `leading()` is false (the Lease not renewed in time) nothing is planned or written."""
        backoff, requeue, fenced = 1.0, 0.0, False
        while not self.stop.is_set():
            self.wake.wait(timeout=requeue)
            if self.stop.wait(_DEBOUNCE_SECONDS):
                return
            self.wake.clear()
            if not leading():
                fenced, requeue = True, _FENCED_RECHECK_SECONDS
                continue
            if fenced:
                fenced = False
                _LOG.info("leading again: reconciling from what the API server says now")
            try:
                requeue = self.round().requeue_after
                backoff = 1.0
            except NotLeader as error:
                _LOG.warning("%s; pausing until the Lease is renewed", error)
                fenced, requeue = True, _FENCED_RECHECK_SECONDS
            except Exception as error:  # a bug: said with its traceback, retried with backoff
                _LOG.exception("reconcile failed: %s", error)
                self._metrics.failed.inc()
                self._metrics.status.set(OPERATOR_ERROR)
                requeue, backoff = backoff, min(backoff * 2, 60.0)
