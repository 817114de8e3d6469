"""Resource types by group, version and plural, and the lightkube generic resource each one is served as.

The agents keep objects as plain dicts, so every type - core ones too - goes through lightkube as a generic
resource (a dict subclass) rather than lightkube's typed models. The classes are built with lightkube's
`create_api_info` but not registered: `create_global_resource`/`create_namespaced_resource` would put them in
lightkube's process-wide registry, where a generic `v1/Pod` would change what other lightkube users in the same
process load for `Pod`, and a typed class registered first would be handed back instead of a dict one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from lightkube.core.resource import Resource as LightkubeResource
from lightkube.core.resource import ApiInfo
from lightkube.generic_resource import (
    GenericGlobalResource,
    GenericGlobalStatus,
    GenericNamespacedResource,
    GenericNamespacedStatus,
    create_api_info,
)

__all__ = ["CONFIG_MAPS", "DAEMON_SETS", "EVENTS", "NAMESPACES", "NODES", "NODE_FEATURES", "PODS", "Resource",
           "generic_model", "status_model"]


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


@cache
def generic_model(resource: Resource) -> type[LightkubeResource]:
    """The lightkube generic resource class (a dict subclass) for a resource type."""
    base = GenericNamespacedResource if resource.namespaced else GenericGlobalResource
    info = create_api_info(resource.group, resource.version, resource.kind, resource.plural)
    return type(resource.kind, (base,), {"_api_info": info})


@cache
def status_model(resource: Resource) -> type[LightkubeResource]:
    """The lightkube generic class of a resource type's `status` subresource (`nodes/status`)."""
    parent = generic_model(resource)._api_info  # type: ignore[attr-defined]
    base = GenericNamespacedStatus if resource.namespaced else GenericGlobalStatus
    info = ApiInfo(resource=parent.resource, parent=parent.resource, plural=parent.plural,
                   verbs=["get", "patch", "put"], action="status")
    return type(f"{resource.kind}Status", (base,), {"_api_info": info})


PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
EVENTS = Resource("", "v1", "events", "Event")
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet")
#: NFD's per-node feature objects (what GFD publishes with the NodeFeature API).
NODE_FEATURES = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", "NodeFeature")
