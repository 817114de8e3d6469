"""The controller's writes: a plan's pod actions and node patches, carried out through lightkube.

Every write is idempotent by construction: a node patch is a JSON merge patch of the values the plan wants (a
retry writes the same values), an eviction of a pod that is already gone or terminating is not sent, and a node
deleted mid-upgrade (404) is simply no longer there. A pod step's clock starts at its first eviction: as kubectl's
drain helper (which NVIDIA's pod and drain managers run with the policy's `timeoutSeconds`), the timeout covers
the whole wait, refusals by a PodDisruptionBudget and pods stuck terminating alike, and the reconcile fails the
node once it has passed, with what it was still waiting for; a pod that may not be evicted at all fails it at
once, with the pod and the setting that would allow it. Transient failures of the API (5xx, 429 from priority
and fairness, lost connections) are retried by the client's transport (:mod:`gpu_operator.agents.kube.transport`);
what still fails raises the exception of :mod:`gpu_operator.agents.kube.errors`.

The node's pods are read only for nodes at the pod steps, with a field selector on `spec.nodeName`, and reduced
to counts (:class:`NodePods`): GPU pods to delete, jobs to wait for, pods a drain would evict. A pod holding a
ResourceClaim that NVIDIA's DRA driver allocated is a GPU pod (gpu-operator's PodHasNVIDIAGPUClaim rules, see
`agents.driver_manager.claims`: admin-access allocations do not count, a claim that cannot be read does). Which pods those
are, and which may not be evicted at all (emptyDir data without `deleteEmptyDir`, no controller without `force`,
as kubectl's drain helper refuses them), are the driver manager's rules (`agents.driver_manager.pods`), so the
controller and the driver pod's init container agree on every pod.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import httpx2
from lightkube import ApiError as LightkubeApiError
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.resource_v1 import ResourceClaim
from lightkube.types import PatchType

from gpu_operator.agents.controller.cluster_state import NodePods, gpu_claim_holders
from gpu_operator.agents.controller.reconcile import PodAction
from gpu_operator.agents.controller.settings import PodStepOptions
from gpu_operator.agents.driver_manager import pods as pod_rules
from gpu_operator.agents.driver_manager.claims import allocated_to_nvidia_gpu, claim_names
from gpu_operator.agents.driver_manager.kube import pod_facts
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.agents.kube.errors import KubeError, NotFound, TooManyRequests, kube_error
from gpu_operator.facts.label_selector import LabelSelector
from gpu_operator.remediation import NodePatch

__all__ = ["Actuator", "node_pods"]

_LOG = logging.getLogger(__name__)
T = TypeVar("T")


def _call(request: Callable[[], T]) -> T:
    """`request`, a failure raised as our exception (the transport has retried what was worth retrying)."""
    try:
        return request()
    except httpx2.HTTPError as error:
        raise kube_error(error) from error


def node_pods(pods: Iterable[pod_rules.PodFacts], wait_selector: LabelSelector, drain: DrainOptions) -> NodePods:
    """A node's pods as the upgrade counts them: the step waits while any is left, terminating ones included."""
    pods = list(pods)
    return NodePods(
        gpu_pods=len(pod_rules.gpu_pods(pods)),
        jobs_running=sum(bool(wait_selector.text) and not pod.finished and wait_selector.matches(pod.labels)
                         for pod in pods),
        drainable=len(pod_rules.drain_pods(pods, drain)),
    )


class Actuator:
    """Carries out plans; `blocked_since` remembers when each node's pod step first evicted, `waiting_for` what it
    still waits for (a refusal, pods terminating), `refusals` the pods that may not be evicted at all."""

    def __init__(self, client: Client, namespace: str, *, wait_selector: LabelSelector = LabelSelector(""),
                 pod_deletion: DrainOptions = DrainOptions(), drain: DrainOptions = DrainOptions(),
                 clock: Callable[[], float] = time.time) -> None:
        self._client, self._namespace = client, namespace
        self._wait_selector, self._pod_deletion, self._drain = wait_selector, pod_deletion, drain
        self._clock = clock
        self.blocked_since: dict[str, float] = {}
        self.waiting_for: dict[str, str] = {}
        self.refusals: dict[str, str] = {}
        self._remembered_for: dict[str, str] = {}
        """The pod action (`evict-gpu-pods` or `drain`) whose clock is running, per node: a drain after a failed
        deletion starts with a clean slate and its own timeout."""

    def pods_on(self, node: str) -> list[pod_rules.PodFacts]:
        listed = _call(lambda: list(self._client.list(Pod, namespace="*", fields={"spec.nodeName": node})))
        facts = []
        for pod in listed:
            fact = pod_facts(pod)
            if not fact.gpu and not fact.finished and self._holds_gpu_claim(pod):
                fact = dataclasses.replace(fact, gpu=True)
            facts.append(fact)
        return facts

    def _holds_gpu_claim(self, pod: Pod) -> bool:
        namespace = pod.metadata.namespace or ""
        for name in claim_names(pod):
            try:
                claim = _call(lambda name=name: self._client.get(ResourceClaim, name, namespace=namespace))
            except KubeError as error:
                _LOG.warning("cannot read ResourceClaim %s/%s of pod %s (%s): counting the pod as a GPU pod",
                             namespace, name, pod.metadata.name, error)
                return True
            if allocated_to_nvidia_gpu(claim, include_admin_access=False):
                return True
        return False

    def gpu_claim_nodes(self, node: str) -> frozenset[str]:
        """{node} when a pod on it holds a ResourceClaim of NVIDIA's GPU DRA driver (gpu-operator's
        nodeHasDRAClaimPods rules, :func:`.cluster_state.gpu_claim_holders`), else nothing; a claim that cannot be
        read counts as one."""
        pods = _call(lambda: list(self._client.list(Pod, namespace="*", fields={"spec.nodeName": node})))
        claims: dict[tuple[str, str], Any] = {}
        for pod in pods:
            namespace = pod.metadata.namespace or ""
            for name in claim_names(pod):
                try:
                    claims[(namespace, name)] = _call(
                        lambda name=name: self._client.get(ResourceClaim, name, namespace=namespace))
                except KubeError as error:
                    _LOG.warning("cannot read ResourceClaim %s/%s (%s): counting it as a GPU claim", namespace,
                                 name, error)
        return gpu_claim_holders(pods, claims)

    def _options(self, steps: PodStepOptions | None) -> PodStepOptions:
        """The pod step options of the node's driver group, else the ones this actuator was made with."""
        return steps or PodStepOptions(self._wait_selector, self._pod_deletion, self._drain)

    def count_pods(self, nodes: Iterable[str], steps: PodStepOptions | None = None) -> dict[str, NodePods]:
        options = self._options(steps)
        return {node: node_pods(self.pods_on(node), options.wait_pod_selector, options.drain) for node in nodes}

    def _evict(self, node: str, pods: Iterable[pod_rules.PodFacts], targets: Iterable[pod_rules.PodFacts]) -> None:
        """Evict `pods` (the `targets` not yet terminating); the step's clock starts now if it is not running, and
        `waiting_for` says what the step still waits for."""
        self.blocked_since.setdefault(node, self._clock())
        refused: list[str] = []
        for pod in pods:
            eviction = Pod.Eviction(metadata=ObjectMeta(name=pod.name, namespace=pod.namespace))
            try:
                self._client.create(eviction, name=pod.name, namespace=pod.namespace)
            except httpx2.HTTPError as error:
                failure = kube_error(error)
                if isinstance(failure, NotFound):
                    continue
                if not _refused_by_budget(error, failure):
                    raise failure from error  # throttled past the client's retries: the next round tries again
                refused.append(f"{pod.namespace}/{pod.name}")
        leaving = [f"{pod.namespace}/{pod.name}" for pod in targets if f"{pod.namespace}/{pod.name}" not in refused]
        if refused:
            self.waiting_for[node] = f"a PodDisruptionBudget refused the eviction of {_names(refused)}"
        elif leaving:
            self.waiting_for[node] = f"{_names(leaving)} still terminating"
        else:
            self.waiting_for.pop(node, None)

    def run_pod_action(self, action: PodAction, steps: PodStepOptions | None = None) -> None:
        if action.kind == "delete":
            try:
                _call(lambda: self._client.delete(Pod, action.pod, namespace=self._namespace))
            except NotFound:
                pass
            return
        if self._remembered_for.get(action.node, action.kind) != action.kind:
            self.forget_node(action.node)
        self._remembered_for[action.node] = action.kind
        pods = self.pods_on(action.node)
        gpu = action.kind == "evict-gpu-pods"
        chosen_steps = self._options(steps)
        options = chosen_steps.pod_deletion if gpu else chosen_steps.drain
        targets = pod_rules.gpu_pods(pods) if gpu else pod_rules.drain_pods(pods, options)
        chosen = [pod for pod in targets if not pod.terminating]
        # as kubectl's drain helper: one pod that may not be evicted fails the step before any eviction
        refused = pod_rules.refusals(chosen, options, gpu=gpu)
        if refused:
            setting = "podDeletion" if gpu else "drain"
            self.refusals[action.node] = (f"{'; '.join(refused)} (upgradePolicy.{setting}: force evicts pods no "
                                          "controller manages, deleteEmptyDir pods with emptyDir data)")
            return
        self._evict(action.node, chosen, targets)

    def patch_node(self, patch: NodePatch, version: str | None = None) -> bool:
        """Apply one node patch; False when the node is gone. A patch with taints replaces the node's list, so it
        carries the Node's `version` (when given): a taint someone added since makes it fail (409), not vanish."""
        body: dict[str, Any] = {"metadata": {}}
        if patch.labels:
            body["metadata"]["labels"] = dict(patch.labels)
        if patch.annotations:
            body["metadata"]["annotations"] = dict(patch.annotations)
        spec: dict[str, Any] = {}
        if patch.unschedulable is not None:
            spec["unschedulable"] = patch.unschedulable
        if patch.taints is not None:
            spec["taints"] = [{"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
                              for t in patch.taints]
            if version:
                body["metadata"]["resourceVersion"] = version
        if spec:
            body["spec"] = spec
        try:
            _call(lambda: self._client.patch(Node, patch.node, body, patch_type=PatchType.MERGE))
        except NotFound:
            return False
        return True

    def forget_node(self, node: str) -> None:
        for memory in (self.blocked_since, self.waiting_for, self.refusals, self._remembered_for):
            memory.pop(node, None)

    def forget(self, nodes: Iterable[str]) -> None:
        """Drop what was refused of nodes that left the pod steps (or the cluster)."""
        keep = set(nodes)
        for node in {*self.blocked_since, *self.waiting_for, *self.refusals, *self._remembered_for} - keep:
            self.forget_node(node)


def _refused_by_budget(error: Exception, failure: KubeError) -> bool:
    """A 429 the Eviction API answered with a Status (a PodDisruptionBudget said no), not the plain-text 429 of
    the API server's own throttling."""
    return isinstance(failure, TooManyRequests) and isinstance(error, LightkubeApiError)


def _names(pods: list[str], shown: int = 3) -> str:
    more = f" and {len(pods) - shown} more" if len(pods) > shown else ""
    return ", ".join(pods[:shown]) + more
