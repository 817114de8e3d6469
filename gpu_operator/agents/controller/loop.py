"""The controller's loop: watches wake it, the pure reconcile decides, the actuator writes, the status follows.

A round starts when a watched object changes (Nodes; the driver and validator pods, DaemonSets and
ControllerRevisions of the operator's namespace) or when the plan's requeue time comes (while pods are being
evicted, at a timeout's deadline, else at the resync). Events arriving during a round are batched into the next.
A round that fails (the API refused a write) is retried with backoff and counted in
`gpu_operator_reconciliation_failed_total`; the state on the API is always the truth a new round starts from.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from lightkube import ApiError, Client
from lightkube.models.core_v1 import EventSource, ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import ConfigMap, Event, Node, Pod
from lightkube import operators

from gpu_operator.agents.controller.actuator import Actuator
from gpu_operator.agents.controller.cluster_state import (
    ClusterState,
    DaemonSetFacts,
    daemonset_facts,
    node_facts,
    pod_facts,
)
from gpu_operator.agents.controller.informer import Informer, warm_decoders
from gpu_operator.agents.controller.metrics import OPERATOR_ERROR, ControllerMetrics
from gpu_operator.agents.controller.reconcile import Plan, UpgradeEvent, nodes_needing_pods, reconcile
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.controller.status import STATUS_CONFIG_MAP, census, operand_status, status_data
from gpu_operator.upgrade.revisions import newest_revisions

__all__ = ["DECODED", "EVENT_NAMESPACE", "ControllerLoop"]

_LOG = logging.getLogger(__name__)
_DEBOUNCE_SECONDS = 0.1
_COMPONENT = "gpu-operator-controller"
#: Events of a cluster-scoped object (a Node) live in `default`, as the kubelet's and NVIDIA's do: the API server
#: accepts a Node's event in no other namespace.
EVENT_NAMESPACE = "default"
#: Every type the controller's threads decode (see informer.warm_decoders).
DECODED = (Node, Pod, DaemonSet, ControllerRevision, ConfigMap, Event, Lease, Pod.Eviction)


class ControllerLoop:
    def __init__(self, client: Client, settings: ControllerSettings, metrics: ControllerMetrics, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._client, self._settings, self._metrics, self._clock = client, settings, metrics, clock
        self.wake = threading.Event()
        ns, resync = settings.namespace, settings.resync_seconds
        apps = operators.in_([settings.driver_app, *settings.validator_apps])
        self._nodes = Informer(client, Node, self.wake, resync_seconds=resync)
        self._pods = Informer(client, Pod, self.wake, namespace=ns, labels={"app": apps}, resync_seconds=resync)
        self._daemonsets = Informer(client, DaemonSet, self.wake, namespace=ns, resync_seconds=resync)
        self._revisions = Informer(client, ControllerRevision, self.wake, namespace=ns, resync_seconds=resync)
        self._informers = (self._nodes, self._pods, self._daemonsets, self._revisions)
        self.actuator = Actuator(client, ns, wait_selector=settings.wait_pod_selector,
                                 pod_deletion=settings.pod_deletion, drain=settings.drain, clock=clock)
        self._status: dict[str, str] | None = None
        self._status_written = 0.0
        self.rounds = 0
        self.last_round = time.monotonic()

    def start(self, timeout: float = 60.0) -> None:
        """Start the watches one after the other, each once the one before has listed."""
        warm_decoders(DECODED)
        deadline = time.monotonic() + timeout
        for informer in self._informers:
            informer.start()
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"the watch of {informer.name} did not sync within {timeout:.0f} s")

    def state(self) -> ClusterState:
        revisions = newest_revisions(self._revisions.items())
        daemonsets: dict[str, DaemonSetFacts] = {
            ds.metadata.name: daemonset_facts(ds, revisions.get(ds.metadata.name, "")) for ds in self._daemonsets.items()
        }
        nodes = {facts.name: facts for facts in map(node_facts, self._nodes.items())}
        state = ClusterState(nodes=nodes, pods=tuple(map(pod_facts, self._pods.items())), daemonsets=daemonsets)
        needing = nodes_needing_pods(state)
        self.actuator.forget(needing)
        return ClusterState(nodes, state.pods, daemonsets, self.actuator.count_pods(needing),
                            dict(self.actuator.blocked_since), dict(self.actuator.refusals))

    def round(self) -> Plan:
        """One reconcile: observe, plan, write; returns the plan carried out."""
        started = time.monotonic()
        now = self._clock()
        state = self.state()
        plan = reconcile(state, self._settings, now)
        for action in plan.pod_actions:
            self.actuator.run_pod_action(action)
            self._metrics.writes.labels(action.kind).inc()
        for patch in plan.patches:
            if self.actuator.patch_node(patch):
                self._metrics.writes.labels("node-patch").inc()
        for event in plan.events:
            self._event(event, now)
        operands = operand_status(state.daemonsets.values())
        summary = census(state, plan.observations, self._settings.upgrade.max_parallel_upgrades, operands)
        self._write_status(status_data(state, summary, operands))
        self._metrics.record(summary, self._settings.upgrade.auto_upgrade, now)
        self._metrics.duration.observe(time.monotonic() - started)
        self.rounds += 1
        self.last_round = time.monotonic()
        return plan

    def _event(self, event: UpgradeEvent, now: float) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        body = Event(
            metadata=ObjectMeta(generateName=f"{event.node}.", namespace=EVENT_NAMESPACE),
            involvedObject=ObjectReference(kind="Node", name=event.node, apiVersion="v1"),
            reason="GPUDriverUpgrade", message=event.message, type="Warning" if event.warning else "Normal",
            source=EventSource(component=_COMPONENT), firstTimestamp=stamp, lastTimestamp=stamp, count=1,
        )
        try:
            self._client.create(body)
            self._metrics.writes.labels("event").inc()
        except ApiError as error:  # an event is a report: losing one must not stop the upgrade
            _LOG.warning("could not record the event for %s: %s", event.node, error)

    def _write_status(self, data: dict[str, str], min_interval: float = 5.0) -> None:
        if data == self._status or time.monotonic() - self._status_written < min_interval and self._status:
            return
        body = ConfigMap(metadata=ObjectMeta(name=STATUS_CONFIG_MAP, namespace=self._settings.namespace,
                                             labels={"app": "gpu-operator"}), data=data)
        try:
            try:
                self._client.replace(body)
            except ApiError as error:
                if error.status.code != 404:
                    raise
                self._client.create(body)
            self._metrics.writes.labels("status").inc()
            self._status, self._status_written = data, time.monotonic()
        except ApiError as error:
            _LOG.warning("could not write the status ConfigMap: %s", error)

    def run(self, stop: threading.Event) -> None:
        """Reconcile until `stop` is set: on every wake, or when the last plan asked to come back."""
        backoff, requeue = 1.0, 0.0
        while not stop.is_set():
            self.wake.wait(timeout=requeue)
            if stop.is_set():
                return
            stop.wait(_DEBOUNCE_SECONDS)
            self.wake.clear()
            try:
                requeue = self.round().requeue_after
                backoff = 1.0
            except Exception as error:  # a failed round is retried; the API's state is the truth to start from
                _LOG.exception("reconcile failed: %s", error)
                self._metrics.failed.inc()
                self._metrics.status.set(OPERATOR_ERROR)
                requeue, backoff = backoff, min(backoff * 2, 60.0)
