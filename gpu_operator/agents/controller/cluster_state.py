"""What the controller knows of the cluster: small, immutable facts distilled from the objects its watches see.

The watches keep lightkube objects; the reconcile reads only these facts, so it stays a pure function that a
test (or a benchmark of 5,000 nodes) can call without an API server. Each `*_facts` function reads one object;
:func:`gpu_claim_holders` reads the pods of the nodes the labeller asks about and their ResourceClaims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpu_operator.agents.driver_manager.claims import allocated_to_nvidia_gpu, claim_names
from gpu_operator.upgrade.revisions import REVISION_LABEL
from gpu_operator.upgrade.stages import RolloutMemory

__all__ = [
    "ClusterState",
    "DaemonSetFacts",
    "NodeFacts",
    "NodePods",
    "PodFacts",
    "daemonset_facts",
    "gpu_claim_holders",
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
    orphaned: bool = False
    """It has no owner at all (NVIDIA's IsOrphanedPod): a driver pod left behind by a DaemonSet that is gone."""
    target_node: str = ""
    """The node it is for: `node` once bound, else the node its DaemonSet's node affinity names (a DaemonSet pod
    waiting for the scheduler), else ""."""


@dataclass(frozen=True)
class DaemonSetFacts:
    name: str
    revision: str = ""
    """The hash of the DaemonSet's newest ControllerRevision ("" until the controller manager wrote one)."""
    digest: str = ""
    desired: int = 0
    """`status.desiredNumberScheduled`: the nodes it should run a pod on."""
    ready: int = 0
    updated: int = 0
    app: str = ""
    """Its own `app` label (NVIDIA finds the driver DaemonSets by their labels)."""


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
    eviction_waiting_for: Mapping[str, str] = field(default_factory=dict)
    """What each node's pod step still waits for (a refusal, pods terminating): the reason it fails with when its
    timeout passes."""
    remediation_holds: frozenset[str] = frozenset()
    """Nodes the GPU fault remediation holds, or takes this round: never admitted to a driver upgrade (the upgrade
    reads them as skipped; their remediation state label says the same once written)."""
    gpu_claim_nodes: frozenset[str] = frozenset()
    """Of the nodes `reconcile.nodes_needing_claims` names, those where a pod still holds a ResourceClaim of
    NVIDIA's GPU DRA driver (:func:`gpu_claim_holders`): their `gpu.deploy.dra-driver` label stays for now."""
    node_faults: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The GPU fault classes the remediation finds on each node now (a staged rollout's soak halts on one)."""
    rollout_memory: RolloutMemory = RolloutMemory()
    """What the staged rollout's gate remembers (kept in the status ConfigMap between rounds and leaders)."""
    firing_alerts: frozenset[str] | None = frozenset()
    """The alerts firing in the rollout's Prometheus (None: they could not be read)."""


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


def _affinity_node(spec: Any) -> str:
    """The node a DaemonSet pod's required node affinity pins it to (`matchFields` on `metadata.name`)."""
    required = _get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    for term in _get(required, "nodeSelectorTerms") or ():
        for field_ in term.matchFields or ():
            if field_.key == "metadata.name" and field_.operator == "In" and len(field_.values or ()) == 1:
                return str(field_.values[0])
    return ""


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
                    _pod_digest(spec), ready, meta.deletionTimestamp is not None, running_ready, restarts,
                    not meta.ownerReferences, spec.nodeName or _affinity_node(spec))


def daemonset_facts(daemonset: Any, revision: str) -> DaemonSetFacts:
    """Facts of a lightkube DaemonSet whose newest ControllerRevision has hash `revision`."""
    meta, status, template = daemonset.metadata, daemonset.status, daemonset.spec.template
    return DaemonSetFacts(
        meta.name, revision, _pod_digest(template.spec), int(_get(status, "desiredNumberScheduled") or 0),
        int(_get(status, "numberReady") or 0), int(_get(status, "updatedNumberScheduled") or 0),
        (meta.labels or {}).get("app", ""))


def gpu_claim_holders(pods: Iterable[Any], claims: Mapping[tuple[str, str], Any]) -> frozenset[str]:
    """The nodes where a pod (lightkube objects) holds a ResourceClaim of NVIDIA's GPU DRA driver, as
    gpu-operator's nodeHasDRAClaimPods judges: terminating pods count (the kubelet plugin must unprepare their
    claims), finished ones without a deletion timestamp do not, admin-access results count, and a claim missing
    from `claims` ((namespace, name) -> ResourceClaim: one that could not be read) counts as a GPU claim."""
    holders = set()
    for pod in pods:
        meta, node = pod.metadata, _get(pod, "spec", "nodeName")
        finished = _get(pod, "status", "phase") in ("Succeeded", "Failed")
        if not node or node in holders or (finished and meta.deletionTimestamp is None):
            continue
        for name in claim_names(pod):
            claim = claims.get((meta.namespace or "", name))
            if claim is None or allocated_to_nvidia_gpu(claim, include_admin_access=True):
                holders.add(node)
                break
    return frozenset(holders)
