"""Pod UIDs and labels for `--kubernetes-enable-pod-uid` / `--kubernetes-enable-pod-labels`.

The kubelet's pod-resources answer names pods but carries neither UIDs nor labels; those come from the API
server. Once per collection (and only when a device is held by a pod) the exporter lists the pods of its own
node (`fieldSelector=spec.nodeName=<NODE_NAME>`) through the agents' Kubernetes client, with the pod's service
account - what dcgm-exporter's pod informer keeps. The DaemonSet grants that (ClusterRole
`nvidia-dcgm-exporter-read-pods`) exactly when one of the two options is on.

Pod label keys become Prometheus label names: characters outside `[a-zA-Z0-9_]` turn into `_`, a leading digit
gets a `_` in front, only keys matching one of `--kubernetes-pod-label-allowlist-regex` (when given) are kept,
and a key that collides with a label the series already has is renamed `pod_<key>` (then
`pod_<key>_conflict<n>`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gpu_operator.agents.exposition import Labels

if TYPE_CHECKING:  # the API client (lightkube, httpx2: ~6 MiB) is loaded only by an exporter that uses it
    from gpu_operator.agents.kube import KubeClient

__all__ = [
    "ApiPods",
    "LabelRules",
    "PodMetadata",
    "PodMetadataError",
    "PodMetadataSource",
    "sanitize_label_name",
]

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_POD_PREFIX = "pod_"


class PodMetadataError(Exception):
    """The API server could not be asked for this node's pods."""


@dataclass(frozen=True, slots=True)
class PodMetadata:
    """A pod's UID and labels, and its containers by runtime container ID (without the `containerd://` scheme),
    which tells the per-process split of shared GPUs whose process is whose (see :mod:`.process_split`)."""

    uid: str
    labels: Mapping[str, str] = field(default_factory=dict)
    containers: Mapping[str, str] = field(default_factory=dict)


class PodMetadataSource(Protocol):
    """The pods of this node: (namespace, name) -> metadata. Raises PodMetadataError."""

    def pods(self) -> Mapping[tuple[str, str], PodMetadata]: ...


def sanitize_label_name(key: str) -> str:
    name = _INVALID.sub("_", key)
    return f"_{name}" if name[:1].isdigit() else name


@dataclass(frozen=True, slots=True)
class LabelRules:
    """Which pod labels to keep and how to name them."""

    allowlist: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_patterns(cls, patterns: Sequence[str]) -> LabelRules:
        return cls(tuple(re.compile(p) for p in patterns if p))

    def allowed(self, key: str) -> bool:
        return not self.allowlist or any(p.search(key) for p in self.allowlist)

    def labels(self, pod_labels: Mapping[str, str], taken: Collection[str]) -> Labels:
        """The kept pod labels as (name, value), renamed away from the names in `taken`."""
        used = set(taken)
        chosen: list[tuple[str, str]] = []
        for key in sorted(pod_labels):
            if not self.allowed(key):
                continue
            name = _free_name(sanitize_label_name(key), used)
            used.add(name)
            chosen.append((name, pod_labels[key]))
        return tuple(chosen)


def _free_name(name: str, used: Collection[str]) -> str:
    if name not in used:
        return name
    base = candidate = _POD_PREFIX + name
    conflict = 0
    while candidate in used:
        conflict += 1
        candidate = f"{base}_conflict{conflict}"
    return candidate


def _containers(status: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for container in status.get("containerStatuses") or ():
        container_id = str(container.get("containerID") or "")
        if container_id:
            found[container_id.split("://", 1)[-1]] = str(container.get("name", ""))
    return found


def _metadata(item: Mapping[str, Any]) -> tuple[tuple[str, str], PodMetadata]:
    meta = item.get("metadata", {})
    key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
    containers = _containers(item.get("status") or {})
    return key, PodMetadata(str(meta.get("uid", "")), dict(meta.get("labels") or {}), containers)


class ApiPods:
    """This node's pods from the API server (`fieldSelector=spec.nodeName=<node>`), through the agents' client."""

    def __init__(self, client: KubeClient, node_name: str) -> None:
        self._client = client
        self._fields = {"spec.nodeName": node_name} if node_name else None

    def pods(self) -> Mapping[tuple[str, str], PodMetadata]:
        from gpu_operator.agents.kube import PODS, KubeError

        try:
            listed = self._client.list(PODS, fields=self._fields)
        except KubeError as error:
            raise PodMetadataError(f"listing this node's pods failed: {error}") from error
        return dict(_metadata(item) for item in listed)
