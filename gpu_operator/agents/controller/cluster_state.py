"""What the controller knows of the cluster: small, immutable facts distilled from the objects its watches see.

The watches keep lightkube objects; the reconcile reads only these facts, so it stays a pure function that a
test (or a benchmark of 5,000 nodes) can call without an API server. Each `*_facts` function reads one object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpu_operator.upgrade.revisions import REVISION_LABEL

__all__ = [
    "ClusterState",
    "DaemonSetFacts",
    "NodeFacts",
    "NodePods",
    "PodFacts",
    "daemonset_facts",
    "node_facts",
    "pod_facts",
]

#: The env var whose value fingerprints what the driver pod installs (render/operands/driver_digest.py).
DIGEST_ENV = "DRIVER_CONFIG_DIGEST"


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    ready: bool = True
    """No Ready condition says False or Unknown (NVIDIA's isNodeConditionReady): a NotReady node is unavailable."""


@dataclass(frozen=True)
class PodFacts:
    """An operand pod in the operator's namespace (a driver or validator pod)."""

    name: str
    node: str
    app: str
    owner: str = ""
    """The DaemonSet that owns it."""
    revision: str = ""
    """Its `controller-revision-hash` label: the DaemonSet template it was created from."""
    digest: str = ""
    ready: bool = False
    terminating: bool = False
    running_ready: bool = False
    """Phase Running with at least one container status, every one Ready (how NVIDIA judges a driver pod)."""
    restarts: int = 0
    """The most restarts of a container (or init container) that is not Ready."""


@dataclass(frozen=True)
class DaemonSetFacts:
    name: str
    revision: str = ""
    """The hash of the DaemonSet's newest ControllerRevision ("" until the controller manager wrote one)."""
    digest: str = ""
    desired: int = 0
    ready: int = 0
    updated: int = 0


@dataclass(frozen=True)
class NodePods:
    """The pods of one node that the upgrade waits for or evicts (queried only for nodes at those steps)."""

    gpu_pods: int = 0
    jobs_running: int = 0
    drainable: int = 0


@dataclass(frozen=True)
class ClusterState:
    nodes: Mapping[str, NodeFacts] = field(default_factory=dict)
    pods: tuple[PodFacts, ...] = ()
    daemonsets: Mapping[str, DaemonSetFacts] = field(default_factory=dict)
    node_pods: Mapping[str, NodePods] = field(default_factory=dict)
    eviction_blocked_since: Mapping[str, float] = field(default_factory=dict)
    """Nodes whose evictions a PodDisruptionBudget refused, and since when."""
    eviction_refusals: Mapping[str, str] = field(default_factory=dict)
    """Nodes with a pod that may not be evicted at all (emptyDir data, no controller), and why."""


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if obj is None:
            return None
        obj = getattr(obj, key, None)
    return obj


def node_facts(node: Any) -> NodeFacts:
    """Facts of a lightkube Node."""
    meta = node.metadata
    conditions = _get(node, "status", "conditions") or ()
    ready = not any(c.type == "Ready" and c.status != "True" for c in conditions)
    return NodeFacts(meta.name, MappingProxyType(dict(meta.labels or {})),
                     MappingProxyType(dict(meta.annotations or {})), bool(_get(node, "spec", "unschedulable")), ready)


def _digest_of(containers: Any) -> str:
    for container in containers or ():
        for item in container.env or ():
            if item.name == DIGEST_ENV and item.value:
                return str(item.value)
    return ""


def _pod_digest(spec: Any) -> str:
    return _digest_of(spec.containers) or _digest_of(spec.initContainers)


def pod_facts(pod: Any) -> PodFacts:
    """Facts of a lightkube Pod."""
    meta, spec = pod.metadata, pod.spec
    labels = meta.labels or {}
    owner = next((ref.name for ref in meta.ownerReferences or () if ref.kind == "DaemonSet"), "")
    conditions = _get(pod, "status", "conditions") or ()
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    statuses = _get(pod, "status", "containerStatuses") or ()
    init_statuses = _get(pod, "status", "initContainerStatuses") or ()
    running_ready = (_get(pod, "status", "phase") == "Running" and bool(statuses)
                     and all(status.ready for status in statuses))
    restarts = max((int(status.restartCount or 0) for status in (*init_statuses, *statuses) if not status.ready),
                   default=0)
    return PodFacts(meta.name, spec.nodeName or "", labels.get("app", ""), owner, labels.get(REVISION_LABEL, ""),
                    _pod_digest(spec), ready, meta.deletionTimestamp is not None, running_ready, restarts)


def daemonset_facts(daemonset: Any, revision: str) -> DaemonSetFacts:
    """Facts of a lightkube DaemonSet whose newest ControllerRevision has hash `revision`."""
    meta, status, template = daemonset.metadata, daemonset.status, daemonset.spec.template
    return DaemonSetFacts(
        meta.name, revision, _pod_digest(template.spec), int(_get(status, "desiredNumberScheduled") or 0),
        int(_get(status, "numberReady") or 0), int(_get(status, "updatedNumberScheduled") or 0))
