"""The controller's writes: a plan's pod actions and node patches, carried out through lightkube.

Every write is idempotent by construction: a node patch is a JSON merge patch of the values the plan wants (a
retry writes the same values), an eviction of a pod that is already gone or terminating is not sent, and a node
deleted mid-upgrade (404) is simply no longer there. An eviction refused by a PodDisruptionBudget (429) is
remembered with its time: the reconcile fails the node once the refusal has lasted the policy's timeout.
Transient failures of the API (5xx, 429 from priority and fairness, lost connections) are retried with backoff.

The node's pods are read only for nodes at the pod steps, with a field selector on `spec.nodeName`, and reduced
to counts (:class:`NodePods`): GPU pods to delete, jobs to wait for, pods a drain would evict.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import httpx2 as httpx
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from gpu_operator.agents.controller.cluster_state import NodePods
from gpu_operator.agents.controller.reconcile import NodePatch, PodAction
from gpu_operator.agents.label_selector import parse_selector

__all__ = ["Actuator", "gpu_pod", "node_pods"]

_LOG = logging.getLogger(__name__)
_GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")
DRAIN_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade-drain.skip"
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
_ATTEMPTS = 5
T = TypeVar("T")


def _active(pod: Any) -> bool:
    phase = pod.status.phase if pod.status else None
    return pod.metadata.deletionTimestamp is None and phase not in ("Succeeded", "Failed")


def gpu_pod(pod: Any) -> bool:
    """A pod requesting or limiting an NVIDIA GPU or MIG resource (what NVIDIA's pod deletion selects)."""
    for container in [*(pod.spec.containers or ()), *(pod.spec.initContainers or ())]:
        resources = container.resources
        names = [*((resources.requests or {}) if resources else {}), *((resources.limits or {}) if resources else {})]
        if any(name.startswith(_GPU_RESOURCE_PREFIXES) for name in names):
            return True
    return False


def _drainable(pod: Any, selector: str) -> bool:
    meta = pod.metadata
    labels = meta.labels or {}
    owned_by_daemonset = any(ref.kind == "DaemonSet" for ref in meta.ownerReferences or ())
    return (not owned_by_daemonset and _MIRROR_ANNOTATION not in (meta.annotations or {})
            and labels.get(DRAIN_SKIP_LABEL) != "true" and parse_selector(selector).matches(labels))


def node_pods(pods: Iterable[Any], wait_selector: str, drain_selector: str) -> NodePods:
    """A node's pods as the upgrade counts them (active pods only)."""
    active = [pod for pod in pods if _active(pod)]
    return NodePods(
        gpu_pods=sum(gpu_pod(pod) for pod in active),
        jobs_running=sum(bool(wait_selector) and parse_selector(wait_selector).matches(pod.metadata.labels or {})
                         for pod in active),
        drainable=sum(_drainable(pod, drain_selector) for pod in active),
    )


class Actuator:
    """Carries out plans; `blocked_since` remembers evictions a PodDisruptionBudget refused, per node."""

    def __init__(self, client: Client, namespace: str, *, wait_selector: str = "", drain_selector: str = "",
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client, self._namespace = client, namespace
        self._wait_selector, self._drain_selector = wait_selector, drain_selector
        self._clock, self._sleep = clock, sleep
        self.blocked_since: dict[str, float] = {}
        self.requests = 0

    def _call(self, action: Callable[[], T]) -> T:
        delay = 0.2
        for attempt in range(_ATTEMPTS):
            try:
                self.requests += 1
                return action()
            except ApiError as error:
                if error.status.code not in _TRANSIENT or attempt == _ATTEMPTS - 1:
                    raise
            except httpx.TransportError:
                if attempt == _ATTEMPTS - 1:
                    raise
            self._sleep(delay)
            delay = min(delay * 2, 5.0)
        raise AssertionError("unreachable")

    def pods_on(self, node: str) -> list[Any]:
        return self._call(lambda: list(self._client.list(Pod, namespace="*", fields={"spec.nodeName": node})))

    def count_pods(self, nodes: Iterable[str]) -> dict[str, NodePods]:
        return {node: node_pods(self.pods_on(node), self._wait_selector, self._drain_selector) for node in nodes}

    def _evict(self, node: str, pods: Iterable[Any]) -> None:
        refused = False
        for pod in pods:
            meta = pod.metadata
            eviction = Pod.Eviction(metadata=ObjectMeta(name=meta.name, namespace=meta.namespace))
            try:
                self._call(lambda: self._client.create(eviction, name=meta.name, namespace=meta.namespace))
            except ApiError as error:
                if error.status.code == 404:
                    continue
                if error.status.code != 429:
                    raise
                refused = True
        if refused:
            self.blocked_since.setdefault(node, self._clock())

    def run_pod_action(self, action: PodAction) -> None:
        if action.kind == "delete":
            try:
                self._call(lambda: self._client.delete(Pod, action.pod, namespace=self._namespace))
            except ApiError as error:
                if error.status.code != 404:
                    raise
            return
        pods = [pod for pod in self.pods_on(action.node) if _active(pod)]
        chosen = [p for p in pods if (gpu_pod(p) if action.kind == "evict-gpu-pods"
                                      else _drainable(p, self._drain_selector))]
        self._evict(action.node, chosen)

    def patch_node(self, patch: NodePatch) -> bool:
        """Apply one node patch; False when the node is gone."""
        body: dict[str, Any] = {"metadata": {}}
        if patch.labels:
            body["metadata"]["labels"] = dict(patch.labels)
        if patch.annotations:
            body["metadata"]["annotations"] = dict(patch.annotations)
        if patch.unschedulable is not None:
            body["spec"] = {"unschedulable": patch.unschedulable}
        try:
            self._call(lambda: self._client.patch(Node, patch.node, body, patch_type=PatchType.MERGE))
        except ApiError as error:
            if error.status.code == 404:
                return False
            raise
        return True

    def forget(self, nodes: Mapping[str, Any]) -> None:
        """Drop eviction refusals of nodes that left the pod steps (or the cluster)."""
        for node in list(self.blocked_since):
            if node not in nodes:
                del self.blocked_since[node]
