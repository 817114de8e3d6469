"""Resource types and their REST paths.

A resource type is addressed by group, version and plural name: the core group lives under `/api/v1`,
every other group under `/apis/<group>/<version>`. Namespaced resources add `/namespaces/<ns>`; an object adds
its name, and a subresource (`status`, `eviction`, ...) follows the name. The types the agents use are
declared here once; an agent with its own custom resource declares a `Resource` beside its code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONFIG_MAPS",
    "DAEMON_SETS",
    "EVENTS",
    "NAMESPACES",
    "NODES",
    "NODE_FEATURES",
    "PODS",
    "Resource",
    "label_selector",
]


def _segment(text: str) -> str:
    return quote(text, safe="")


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource type: `group` is "" for the core group; `plural` is the URL name (`pods`, `daemonsets`)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The `apiVersion` of its objects: `v1`, `apps/v1`, `nfd.k8s-sigs.io/v1alpha1`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The REST path of the collection (name None) or of one object; `namespace` None means all namespaces."""
        if not self.namespaced and namespace:
            raise ValueError(f"{self.plural} are cluster-scoped; no namespace applies")
        if subresource and not name:
            raise ValueError("a subresource needs an object name")
        parts = [self.base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{_segment(namespace)}")
        parts.append(self.plural)
        if name:
            parts.append(_segment(name))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
EVENTS = Resource("", "v1", "events", "Event")
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet")
#: NFD's per-node feature objects (what GFD publishes with the NodeFeature API).
NODE_FEATURES = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", "NodeFeature")


def label_selector(labels: Mapping[str, str]) -> str:
    """An equality-based selector matching every given label: `app=x,tier=y`."""
    return ",".join(f"{key}={value}" for key, value in labels.items())
