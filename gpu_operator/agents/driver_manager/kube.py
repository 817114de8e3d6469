"""The API server side, through lightkube: read the node and its pods, patch the node, evict pods.

Every request the driver manager makes is one of these, which is what the driver DaemonSet's ClusterRole grants
and nothing more: `get` and `patch` on nodes, `list` on pods (all namespaces, by `spec.nodeName`), `get` on the
ResourceClaims those pods hold (a pod with a claim NVIDIA's DRA driver allocated is a GPU pod, see
:mod:`.claims`) and `create` on pods/eviction. Node patches are JSON merge patches of the keys that change, so a concurrent writer of other
labels (the operator, NFD) is never overwritten and no conflict can occur.

Transient failures (a connection error, throttling, 5xx) are retried by the agents' one retry policy, in the
client's transport (:mod:`gpu_operator.agents.kube.transport`); what still fails, and every other refusal, is a
:class:`KubeFailure` carrying the server's message. An eviction answered 429 by a disruption budget is not an
error but :class:`EvictionRefused` (it forbids it for now), which the decisions retry later; an eviction of a pod
already gone (404) succeeded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
from lightkube import ALL_NS, ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.resource_v1 import ResourceClaim
from lightkube.types import PatchType

from gpu_operator.agents.driver_manager.claims import allocated_to_nvidia_gpu, claim_names
from gpu_operator.agents.driver_manager.labels import CORDONED_ANNOTATION
from gpu_operator.agents.driver_manager.pods import PodFacts, uses_gpu
from gpu_operator.agents.driver_manager.snapshot import NodeFacts
from gpu_operator.agents.kube.errors import kube_error

__all__ = [
    "FIELD_MANAGER",
    "EvictionRefused",
    "KubeFailure",
    "NodeApi",
    "node_facts",
    "pod_facts",
]

FIELD_MANAGER = "gpu-operator-driver-manager"
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
T = TypeVar("T")


class KubeFailure(RuntimeError):
    """A request the API server refused, or that kept failing after the retries."""


class EvictionRefused(RuntimeError):
    """The Eviction API answered 429: a disruption budget does not allow it now."""


def _code(error: ApiError) -> int:
    return int(getattr(error.status, "code", 0) or 0)


def _message(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"{_code(error)} {error.status.message or error.status.reason or ''}".strip()
    return str(kube_error(error))


def _controller(meta: Any) -> str:
    return next((ref.kind for ref in meta.ownerReferences or [] if ref.controller), "")


def _resource_names(spec: Any) -> set[str]:
    names: set[str] = set()
    for container in [*(spec.containers or []), *(spec.initContainers or [])]:
        resources = container.resources
        if resources is not None:
            names.update((resources.requests or {}).keys())
            names.update((resources.limits or {}).keys())
    return names


def pod_facts(pod: Pod) -> PodFacts:
    """What the decisions need of a lightkube Pod."""
    meta, spec = pod.metadata, pod.spec
    return PodFacts(
        namespace=meta.namespace or "",
        name=meta.name or "",
        labels=dict(meta.labels or {}),
        node_selector=dict(spec.nodeSelector or {}),
        controller=_controller(meta),
        gpu=uses_gpu(_resource_names(spec)),
        phase=(pod.status.phase if pod.status is not None else None) or "Pending",
        terminating=meta.deletionTimestamp is not None,
        mirror=_MIRROR_ANNOTATION in (meta.annotations or {}),
        empty_dir=any(volume.emptyDir is not None for volume in spec.volumes or []),
        claims=tuple(claim_names(pod)),
    )


def node_facts(node: Node) -> NodeFacts:
    meta = node.metadata
    return NodeFacts(
        labels=dict(meta.labels or {}),
        annotations=dict(meta.annotations or {}),
        unschedulable=bool(node.spec.unschedulable) if node.spec is not None else False,
    )


@dataclass
class NodeApi:
    """The requests about one node; a failure (after the transport's retries) is a KubeFailure."""

    client: Client
    node: str

    def _call(self, what: str, request: Callable[[], T]) -> T:
        try:
            return request()
        except (ApiError, httpx2.HTTPError) as error:
            raise KubeFailure(f"{what}: {_message(error)}") from None

    def read_node(self) -> NodeFacts:
        return node_facts(self._call(f"get node {self.node}", lambda: self.client.get(Node, self.node)))

    def pods(self) -> tuple[PodFacts, ...]:
        def request() -> list[Pod]:
            return list(self.client.list(Pod, namespace=ALL_NS, fields={"spec.nodeName": self.node}))

        facts = []
        for pod in self._call(f"list pods on node {self.node}", request):
            fact = pod_facts(pod)
            if not fact.gpu and not fact.finished and self._holds_gpu_claim(pod):
                fact = dataclasses.replace(fact, gpu=True)
            facts.append(fact)
        return tuple(facts)

    def _holds_gpu_claim(self, pod: Pod) -> bool:
        """A ResourceClaim of the pod has a device of NVIDIA's DRA driver (k8s-driver-manager's rules: a claim
        gone counts as none, admin access counts; another read failure is a KubeFailure)."""
        namespace = pod.metadata.namespace or ""
        for name in claim_names(pod):
            def request(name: str = name) -> Any:
                try:
                    return self.client.get(ResourceClaim, name, namespace=namespace)
                except ApiError as error:
                    if _code(error) == 404:
                        return None
                    raise

            claim = self._call(f"get resourceclaim {namespace}/{name}", request)
            if claim is not None and allocated_to_nvidia_gpu(claim, include_admin_access=True):
                return True
        return False

    def _patch(self, what: str, body: dict[str, Any]) -> None:
        self._call(what, lambda: self.client.patch(Node, self.node, body, patch_type=PatchType.MERGE))

    def set_labels(self, labels: dict[str, str]) -> None:
        self._patch(f"label node {self.node}", {"metadata": {"labels": labels}})

    def cordon(self) -> None:
        body = {"metadata": {"annotations": {CORDONED_ANNOTATION: "true"}}, "spec": {"unschedulable": True}}
        self._patch(f"cordon node {self.node}", body)

    def uncordon(self) -> None:
        body = {"metadata": {"annotations": {CORDONED_ANNOTATION: None}}, "spec": {"unschedulable": False}}
        self._patch(f"uncordon node {self.node}", body)

    def evict(self, namespace: str, name: str) -> None:
        """Evict one pod; raises :class:`EvictionRefused` on 429 (no retry here), succeeds when it is gone."""
        eviction = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace))

        def request() -> None:
            try:
                self.client.create(eviction, name=name, namespace=namespace)
            except ApiError as error:
                if _code(error) == 404:
                    return
                if _code(error) == 429:
                    raise EvictionRefused(_message(error)) from None
                raise

        self._call(f"evict pod {namespace}/{name}", request)
