"""The acting side of GPU fault remediation: the controller's watches read into the planner's `NodeView`s, the pure
planner (:func:`gpu_operator.remediation.plan`) run every round, and its plan carried out through the API.

What a round does, for the GPU nodes (`nvidia.com/gpu.present=true`) of the Node informer:

* builds each node's view from the Node (labels, annotations, conditions, taints, `bootID`, Ready), its validator
  pod (Ready and since when, from the pod informer), the pods of its paused operands while a reset waits for them
  (read by field selector, only for nodes at that step), AKS auto-repair's hand-off (`agents.cloud.aks_hand_off`),
  and the feedback this leader kept of its drains and cloud calls (memory only: a new leader starts without it and
  the planner, which needs none to avoid repeating a step, waits for what the Node tells);
* plans, and carries each node's plan out in the order the planner requires: the patch first (labels,
  annotations, schedulability; taints with the Node's resourceVersion, so a taint someone added meanwhile is not
  lost, a 409 sending the step to the next round), then only if it was written the drain pass, the validator's
  restart and the cloud call. A cloud call blocks until Azure finishes, so it runs on a worker thread; its
  feedback says `pending` from the moment it starts, so a round never sends a second one;
* reports: Events on the Node (reason `GPURemediation...` from the plan, component `gpu-operator-remediation`),
  the remediation metrics and, for `gpu-operator diag`, each node's step (state, fault, next step) in the status
  ConfigMap.

The drain: `evict` through the Eviction API (a PodDisruptionBudget's refusal is an answer: the pod stays, the
refusal is the reason the drain fails with at its deadline), `delete` deletes the pods, `wait` evicts nothing and
counts. A partial drain (before a GPU reset) takes the pods that hold a GPU: which pod holds which GPU is the
kubelet's to know (its pod-resources API, node-local), so the controller takes every GPU pod of the node (device
plugin resources, or a claim NVIDIA's DRA driver allocated) - a superset of the pods on the faulty GPUs, never
fewer. DaemonSet, mirror and finished pods are never drained (the driver manager's rules, as the upgrade's).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx2
from lightkube import ApiError as LightkubeApiError
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod
from lightkube.resources.resource_v1 import ResourceClaim, ResourceSlice

from gpu_operator.agents.driver_manager import pods as pod_rules
from gpu_operator.agents.driver_manager.claims import NVIDIA_GPU_DRA_DRIVER
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.agents.kube.errors import KubeError, NotFound, TooManyRequests, kube_error
from gpu_operator.remediation import (
    OPERAND_APPS,
    CloudFeedback,
    CloudRequest,
    DrainFeedback,
    DrainPods,
    NodeCondition,
    NodePatch,
    NodeView,
    RemediationPlan,
    RemediationPolicy,
    RestartValidator,
    Taint,
    plan,
)
from gpu_operator.remediation.vocabulary import STATE_LABEL, State, blocks_upgrade

__all__ = ["HOLDERS_ANNOTATION", "POOL_LABEL", "Remediator", "node_view"]

_LOG = logging.getLogger(__name__)
#: AKS's pool label: the remediation's breakers and per-pool rules count by it.
POOL_LABEL = "kubernetes.azure.com/agentpool"
GPU_PRESENT = "nvidia.com/gpu.present"
#: Written by the node agent (agents/health_monitor/holders.py): GPU UUID -> the pods the device plugin gave it.
HOLDERS_ANNOTATION = "nvidia.com/gpu-remediation.gpu-pods"
#: Force and emptyDir data: remediation takes the node down for a repair, as kubectl drain --force
#: --delete-emptydir-data would; the pod rules still never take DaemonSet or mirror pods.
_DRAIN_EVERYTHING = DrainOptions(force=True, delete_emptydir_data=True)


def _epoch(value: Any) -> float | None:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, str) and value:
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _ready_since(pod: Any) -> float | None:
    for condition in (pod.status.conditions if pod.status else None) or ():
        if condition.type == "Ready" and condition.status == "True":
            return _epoch(condition.lastTransitionTime) or 0.0
    return None


def _holders(node: Any) -> dict[str, list[str]] | None:
    """The node agent's `gpu-pods` annotation: GPU UUID -> the pods holding it (None: absent or unreadable)."""
    text = ((node.metadata.annotations or {}) if node is not None else {}).get(HOLDERS_ANNOTATION)
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(found, dict) or not all(isinstance(v, list) for v in found.values()):
        return None
    return {str(uuid): [str(pod) for pod in pods] for uuid, pods in found.items()}


def node_view(node: Any, validators: Mapping[str, float], *, operand_pods: int = 0, aks_repairs: bool = False,
              drain: DrainFeedback | None = None, cloud: CloudFeedback | None = None) -> NodeView:
    """The planner's view of a lightkube Node; `validators` maps a node to the time its validator turned Ready."""
    meta, spec, status = node.metadata, node.spec, node.status
    conditions = tuple(NodeCondition(c.type, c.status, c.reason or "", c.message or "", _epoch(c.lastTransitionTime))
                       for c in (status.conditions if status else None) or ())
    taints = tuple(Taint(t.key, t.effect, t.value or "") for t in (spec.taints if spec else None) or ())
    labels = dict(meta.labels or {})
    ready = not any(c.type == "Ready" and c.status != "True" for c in conditions)
    since = validators.get(meta.name)
    return NodeView(
        meta.name, labels.get(POOL_LABEL, ""), labels, dict(meta.annotations or {}), conditions,
        bool(spec.unschedulable) if spec else False, taints,
        (status.nodeInfo.bootID or "") if status and status.nodeInfo else "", ready, since is not None, since,
        operand_pods, aks_repairs, drain, cloud)


@dataclass
class _Memory:
    """What this leader remembers between rounds (never needed to avoid repeating a step: see the docstring)."""

    drains: dict[str, DrainFeedback] = field(default_factory=dict)
    clouds: dict[str, CloudFeedback] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


Act = Callable[[str, str, Callable[[], object]], bool]


class Remediator:
    """Plans GPU fault remediation each round and carries it out; `cloud` makes the cloud calls (None: no cloud)."""

    def __init__(self, client: Client, policy: RemediationPolicy, namespace: str, *, validator_apps: Iterable[str],
                 pods_on: Callable[[str], list[pod_rules.PodFacts]], patch_node: Callable[[NodePatch, str | None], bool],
                 clock: Callable[[], float], cloud: Any = None, hand_off: Callable[..., Any] | None = None) -> None:
        self._client, self.policy, self._namespace, self._clock = client, policy, namespace, clock
        self._pods_on, self._patch_node = pods_on, patch_node
        """A node's pods as the driver manager's rules see them (a pod holding an NVIDIA DRA claim is a GPU pod)."""
        self._validator_apps = frozenset(validator_apps)
        self._cloud, self._hand_off = cloud, hand_off
        self._memory = _Memory()
        self._workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cloud") if cloud is not None else None

    # --- the views ---------------------------------------------------------------------------------------------

    def _validators(self, pods: Iterable[Any]) -> dict[str, float]:
        ready: dict[str, float] = {}
        for pod in pods:
            if (pod.metadata.labels or {}).get("app") in self._validator_apps and pod.metadata.deletionTimestamp is None:
                since = _ready_since(pod)
                if since is not None and pod.spec.nodeName:
                    ready[pod.spec.nodeName] = since
        return ready

    def _operand_pods(self, node: str) -> int:
        apps = {app for app in OPERAND_APPS.values() if app}
        return sum(pod.labels.get("app") in apps for pod in self._pods_on(node))

    def _aks(self, node: Any, ready: bool) -> bool:
        if self._hand_off is None or not self.policy.cloud.aks_auto_repair:
            return False
        keys = [t.key for t in (node.spec.taints if node.spec else None) or ()]
        return bool(self._hand_off(aks_auto_repair=True, ready=ready, taint_keys=keys,
                                   annotations=dict(node.metadata.annotations or {})).to_aks)

    def views(self, nodes: Iterable[Any], pods: Iterable[Any]) -> dict[str, NodeView]:
        """Every GPU node's view (the breakers' percentages count them all)."""
        validators = self._validators(pods)
        views: dict[str, NodeView] = {}
        with self._memory.lock:
            drains, clouds = dict(self._memory.drains), dict(self._memory.clouds)
        for node in nodes:
            labels = node.metadata.labels or {}
            if labels.get(GPU_PRESENT) != "true":
                continue
            view = node_view(node, validators, drain=drains.get(node.metadata.name),
                             cloud=clouds.get(node.metadata.name))
            resetting = labels.get(STATE_LABEL) == State.RESETTING.value
            views[view.name] = dataclasses.replace(
                view, operand_pods=self._operand_pods(view.name) if resetting else 0,
                aks_repairs=self._aks(node, view.ready))
        return views

    # --- carrying out ------------------------------------------------------------------------------------------

    def _dra_devices(self, node: str) -> dict[str, str]:
        """The node's GPUs as NVIDIA's DRA driver publishes them: device name -> its `uuid` attribute (its
        ResourceSlices, pool = the node)."""
        try:
            slices = list(self._client.list(ResourceSlice, fields={"spec.nodeName": node}))
        except httpx2.HTTPError as error:
            raise kube_error(error) from error
        devices: dict[str, str] = {}
        for found in slices:
            if found.spec.driver != NVIDIA_GPU_DRA_DRIVER:
                continue
            for device in found.spec.devices or ():
                attribute = (device.attributes or {}).get("uuid")
                uuid = attribute.get("string") if isinstance(attribute, dict) else getattr(attribute, "string", None)
                if uuid:
                    devices[device.name] = str(uuid)
        return devices

    def _claimed_gpus(self, drain: DrainPods, pods: list[pod_rules.PodFacts]) -> set[str] | None:
        """The pods (`<namespace>/<name>`) whose NVIDIA DRA claims allocate one of the drain's GPUs; None when a
        claim or the node's slices cannot be read (the drain then takes every GPU pod)."""
        claimed = [pod for pod in pods if pod.claims]
        if not claimed:
            return set()
        try:
            devices = self._dra_devices(drain.node)
            holding: set[str] = set()
            for pod in claimed:
                for name in pod.claims:
                    claim = self._client.get(ResourceClaim, name, namespace=pod.namespace)
                    results = claim.status.allocation.devices.results if claim.status and claim.status.allocation \
                        else ()
                    uuids = {devices.get(r.device) for r in results or () if r.driver == NVIDIA_GPU_DRA_DRIVER}
                    if None in uuids or uuids & set(drain.gpus):
                        holding.add(f"{pod.namespace}/{pod.name}")
            return holding
        except (httpx2.HTTPError, KubeError) as error:
            _LOG.warning("node %s: the GPUs its DRA claims hold cannot be read (%s): draining every GPU pod",
                         drain.node, error if isinstance(error, KubeError) else kube_error(error))
            return None

    def _partial(self, drain: DrainPods, node: Any, pods: list[pod_rules.PodFacts]) -> list[pod_rules.PodFacts]:
        """The pods holding the drain's GPUs: by the device plugin's allocation (the node agent's
        `gpu-pods` annotation, from the kubelet) and by DRA claim; every GPU pod where either is unknown."""
        gpu = pod_rules.gpu_pods(pods)
        listed = _holders(node)
        claimed = self._claimed_gpus(drain, pods)
        if listed is None or claimed is None or not set(drain.gpus) <= set(listed):
            return gpu
        names = {pod for uuid in drain.gpus for pod in listed[uuid]} | claimed
        return [pod for pod in gpu if f"{pod.namespace}/{pod.name}" in names]

    def _drain(self, drain: DrainPods, node: Any = None) -> None:
        pods = self._pods_on(drain.node)
        chosen = self._partial(drain, node, pods) if drain.gpus else pod_rules.drain_pods(pods, _DRAIN_EVERYTHING)
        refused: list[str] = []
        for pod in (p for p in chosen if not p.terminating and drain.mode != "wait"):
            try:
                if drain.mode == "evict":
                    eviction = Pod.Eviction(metadata=ObjectMeta(name=pod.name, namespace=pod.namespace))
                    self._client.create(eviction, name=pod.name, namespace=pod.namespace)
                else:
                    self._client.delete(Pod, pod.name, namespace=pod.namespace)
            except httpx2.HTTPError as error:
                failure = kube_error(error)
                if isinstance(failure, NotFound):
                    continue
                if not (isinstance(failure, TooManyRequests) and isinstance(error, LightkubeApiError)):
                    raise failure from error
                refused.append(f"{pod.namespace}/{pod.name}")
        blocked = f"a PodDisruptionBudget refused the eviction of {', '.join(refused[:3])}" if refused else ""
        with self._memory.lock:
            self._memory.drains[drain.node] = DrainFeedback(drain.gpus, len(chosen), self._clock(), blocked)

    def _restart_validator(self, restart: RestartValidator) -> None:
        for app in self._validator_apps:
            try:
                pods = list(self._client.list(Pod, namespace=self._namespace, labels={"app": app},
                                              fields={"spec.nodeName": restart.node}))
            except httpx2.HTTPError as error:
                raise kube_error(error) from error
            for pod in pods:
                created = _epoch(pod.metadata.creationTimestamp) or 0.0
                if created < restart.created_before and pod.metadata.deletionTimestamp is None:
                    try:
                        self._client.delete(Pod, pod.metadata.name, namespace=self._namespace)
                    except httpx2.HTTPError as error:
                        if not isinstance(kube_error(error), NotFound):
                            raise kube_error(error) from error

    def _call_cloud(self, request: CloudRequest, provider_id: str) -> None:
        with self._memory.lock:
            self._memory.clouds[request.node] = CloudFeedback(request.request, request.action, "pending",
                                                              self._clock())
        assert self._workers is not None

        def call() -> None:
            try:
                result = (self._cloud.reimage if request.action == "reimage" else self._cloud.reboot)(provider_id)
                feedback = CloudFeedback(request.request, request.action, result.outcome.value, self._clock(),
                                         result.retryable, result.retry_after_seconds, result.reason)
            except Exception as error:  # a bug in the cloud path must not leave the node pending forever
                _LOG.exception("the cloud call for node %s failed", request.node)
                feedback = CloudFeedback(request.request, request.action, "failed", self._clock(), False, None,
                                         f"{type(error).__name__}: {error}")
            with self._memory.lock:
                self._memory.clouds[request.node] = feedback

        self._workers.submit(call)

    def plan(self, nodes: Iterable[Any], pods: Iterable[Any], now: float) -> RemediationPlan:
        """This round's plan over the informers' objects (nothing written yet)."""
        result = plan(self.views(nodes, pods), self.policy, now)
        for problem in result.problems:
            _LOG.warning("remediation: %s", problem)
        return result

    @staticmethod
    def holds(result: RemediationPlan) -> frozenset[str]:
        """The nodes the plan leaves held (never admitted to a driver upgrade this round)."""
        return frozenset(name for name, node in result.nodes.items()
                         if blocks_upgrade({STATE_LABEL: node.after.value}))

    def carry_out(self, result: RemediationPlan, nodes: Iterable[Any], act: Act) -> None:
        """Each node's plan in the planner's order; `act(kind, node, action)` runs one write (the loop's: it logs
        and counts a failure, and raises NotLeader when the fence is down)."""
        by_name = {node.metadata.name: node for node in nodes}
        for node_plan in result.nodes.values():
            node = by_name.get(node_plan.node)
            if node_plan.patch is not None:
                version = node.metadata.resourceVersion if node is not None else None
                if not act("remediation-patch", node_plan.node,
                           lambda p=node_plan.patch, v=version: self._patch_node(p, v)):
                    continue  # the drain, reset or cloud call waits until its step is written
            if node_plan.drain is not None:
                act("remediation-drain", node_plan.node, lambda d=node_plan.drain, n=node: self._drain(d, n))
            if node_plan.restart_validator is not None:
                act("validator-restart", node_plan.node, lambda r=node_plan.restart_validator: self._restart_validator(r))
            if node_plan.cloud is not None and self._cloud is not None and node is not None:
                provider = (node.spec.providerID or "") if node.spec else ""
                act("cloud-" + node_plan.cloud.action, node_plan.node,
                    lambda c=node_plan.cloud, p=provider: self._call_cloud(c, p))
        with self._memory.lock:  # forget what no remediating node needs any more
            for memory in (self._memory.drains, self._memory.clouds):
                for name in [n for n in memory if n not in result.nodes
                             or result.nodes[n].after in (State.ABSENT, State.OBSERVING)]:
                    memory.pop(name)

    def close(self) -> None:
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)
