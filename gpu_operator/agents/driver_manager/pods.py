"""The pods on the node as the driver manager sees them, and which of them it waits for, evicts or must refuse.

Three sets matter:

- **operand pods** it paused: pods whose `nodeSelector` names a deploy label that now carries the pause marker
  (in the operator's namespace; GPU clients selected by `nvidia.com/gpu.deploy.client` in any namespace). The
  DaemonSet controller deletes them; the driver manager waits until they are gone. NVIDIA lists the same pods
  by a table of `app` labels; selecting by the paused label itself also covers operands that table lacks.
- **GPU pods**: pods not finished whose containers request or limit a resource named `nvidia.com/gpu*` or
  `nvidia.com/mig-*`. They hold the driver open, so they are evicted before it is unloaded.
- **drain pods**: what `kubectl drain` would evict: every pod not finished, except DaemonSet pods, static
  (mirror) pods, pods labelled `nvidia.com/gpu-driver-upgrade-drain.skip=true` and pods outside
  `DRAIN_POD_SELECTOR_LABEL`.

As in kubectl's drain helper, some pods are refused rather than evicted: pods with emptyDir data unless
`DRAIN_DELETE_EMPTYDIR_DATA`, pods no controller manages unless `DRAIN_USE_FORCE`, and (among GPU pods, which
are never skipped silently) DaemonSet and static pods, which eviction would not keep off the node. One refused
pod fails the whole eviction, before any pod is evicted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpu_operator.agents.driver_manager.labels import CLIENT_LABEL, DRAIN_SKIP_LABEL, is_paused
from gpu_operator.agents.driver_manager.settings import DrainOptions

__all__ = [
    "GPU_RESOURCE_PREFIXES",
    "PodFacts",
    "drain_pods",
    "gpu_pods",
    "refusal",
    "refusals",
    "stale_operand_pods",
    "uses_gpu",
]

#: Resource names that mark a pod as a GPU user (the device plugin's and the MIG strategies' resources).
GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")


@dataclass(frozen=True)
class PodFacts:
    """What the decisions need of one pod on the node."""

    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    controller: str = ""
    """The kind of its controlling owner ("" when no controller manages it)."""
    gpu: bool = False
    phase: str = "Running"
    terminating: bool = False
    """It has a deletionTimestamp: an eviction or deletion is already under way."""
    mirror: bool = False
    """A static pod's mirror (annotation `kubernetes.io/config.mirror`): the API cannot remove it."""
    empty_dir: bool = False
    claims: tuple[str, ...] = ()
    """The ResourceClaims it holds (by name, in its namespace)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


def uses_gpu(resource_names: Iterable[str]) -> bool:
    return any(name.startswith(GPU_RESOURCE_PREFIXES) for name in resource_names)


def stale_operand_pods(
    pods: Iterable[PodFacts], labels: Mapping[str, str], keys: Iterable[str], namespace: str
) -> list[PodFacts]:
    """Running pods selected by one of `keys` whose node label is now paused, so that they no longer match."""
    paused = {key for key in keys if is_paused(labels.get(key, ""))}
    found = []
    for pod in pods:
        if pod.finished:
            continue
        for key in paused & set(pod.node_selector):
            if pod.node_selector[key] != labels[key] and (pod.namespace == namespace or key == CLIENT_LABEL):
                found.append(pod)
                break
    return found


def refusal(pod: PodFacts, options: DrainOptions, *, gpu: bool) -> str:
    """Why `pod` may not be evicted ("" when it may); `gpu` selects the stricter rules for GPU pods."""
    rules = (
        (gpu and pod.controller == "DaemonSet", "is a DaemonSet pod, which eviction would not keep off the node"),
        (gpu and pod.mirror, "is a static pod, which the API server cannot remove"),
        (pod.empty_dir and not options.delete_emptydir_data,
         "has emptyDir data (set DRAIN_DELETE_EMPTYDIR_DATA=true to evict it anyway)"),
        (not pod.controller and not options.force,
         "is not managed by a controller (set DRAIN_USE_FORCE=true to evict it anyway)"),
    )
    return next((reason for applies, reason in rules if applies), "")


def gpu_pods(pods: Iterable[PodFacts]) -> list[PodFacts]:
    return [pod for pod in pods if pod.gpu and not pod.finished]


def _drained(pod: PodFacts, options: DrainOptions) -> bool:
    skipped = (
        pod.finished
        or pod.controller == "DaemonSet"
        or pod.mirror
        or pod.labels.get(DRAIN_SKIP_LABEL) == "true"
        or not options.pod_selector.matches(pod.labels)
    )
    return not skipped


def drain_pods(pods: Iterable[PodFacts], options: DrainOptions) -> list[PodFacts]:
    return [pod for pod in pods if _drained(pod, options)]


def refusals(pods: Sequence[PodFacts], options: DrainOptions, *, gpu: bool) -> list[str]:
    """`namespace/name <reason>` for each pod of `pods` that may not be evicted."""
    return [f"{pod.key} {reason}" for pod in pods if (reason := refusal(pod, options, gpu=gpu))]
