"""`KubeClient`: the small Kubernetes API client every agent shares.

It speaks to the REST API directly - get, list (all pages), create, replace, patch (JSON merge, JSON patch or
strategic merge), delete and watch, for any resource type given as a :class:`Resource` - and returns objects as
plain dicts, as the API serves them. Failures are the exceptions of :mod:`.errors`; transient ones are retried
by the transport first. There is no cache, no informer and no code generation: the agents make a handful of
calls and keep no copy of the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gpu_operator.agents.kube.config import ClusterConfig, load_config
from gpu_operator.agents.kube.resources import Resource
from gpu_operator.agents.kube.retry import DEFAULT_RETRY, RetryPolicy
from gpu_operator.agents.kube.transport import DEFAULT_TIMEOUT, HttpTransport, Query
from gpu_operator.agents.kube.watch import WatchEvent, parse_events

__all__ = ["KubeClient", "ObjectList", "PatchType"]

Object = dict[str, Any]
#: Extra seconds a watch's socket waits beyond the server-side timeout before giving up on a silent server.
_WATCH_SLACK = 15.0


class PatchType(Enum):
    """The patch formats the API server accepts, by content type."""

    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class ObjectList:
    """The items of a list, and the resource version to start a watch from."""

    items: list[Object]
    resource_version: str | None


def _decode(data: bytes) -> Object:
    return json.loads(data) if data.strip() else {}


class KubeClient:
    """API calls against one cluster; `namespace` is the configuration's default namespace, if any."""

    def __init__(
        self, config: ClusterConfig, *, retry: RetryPolicy = DEFAULT_RETRY, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.config = config
        self.namespace = config.namespace
        self._http = HttpTransport(config, retry=retry, timeout=timeout)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, kubeconfig: str | None = None) -> KubeClient:
        """The client for this process: kubeconfig (explicit or `$KUBECONFIG`), else the pod's service account."""
        return cls(load_config(environ, kubeconfig))

    def close(self) -> None:
        self._http.close()

    @staticmethod
    def _object_path(resource: Resource, name: str, namespace: str | None, subresource: str | None = None) -> str:
        if resource.namespaced and not namespace:
            raise ValueError(f"{resource.plural} are namespaced: a namespace is required")
        return resource.path(namespace, name, subresource)

    def get(
        self, resource: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> Object:
        """One object; NotFound when it does not exist."""
        return _decode(self._http.request("GET", self._object_path(resource, name, namespace, subresource)))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> ObjectList:
        """Every matching object (all pages); `namespace` None lists across namespaces."""
        items: list[Object] = []
        token: str | None = None
        version: str | None = None
        while True:
            query: Query = {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "limit": page_size,
                "continue": token,
            }
            page = _decode(self._http.request("GET", resource.path(namespace), query=query))
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            version = metadata.get("resourceVersion", version)
            token = metadata.get("continue") or None
            if token is None:
                return ObjectList(items, version)

    def create(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> Object:
        """Create an object (`metadata.generateName` lets the server pick the name); AlreadyExists on a clash."""
        path = resource.path(namespace) if not resource.namespaced or namespace else None
        if path is None:
            raise ValueError(f"{resource.plural} are namespaced: a namespace is required")
        return _decode(self._http.request("POST", path, body=dict(body)))

    def replace(self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None) -> Object:
        """Replace an object (PUT); Conflict when `metadata.resourceVersion` is stale."""
        name = body["metadata"]["name"]
        return _decode(self._http.request("PUT", self._object_path(resource, name, namespace), body=dict(body)))

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        namespace: str | None = None,
        *,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
    ) -> Object:
        """Patch an object: a merge patch (a partial object) or a JSON patch (a list of operations)."""
        body = json.dumps(patch if isinstance(patch, Mapping) else list(patch)).encode()
        path = self._object_path(resource, name, namespace, subresource)
        return _decode(self._http.request("PATCH", path, body=body, content_type=patch_type.value))

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Object:
        """Delete an object (NotFound when it is already gone); returns what the server answers."""
        options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        return _decode(self._http.request("DELETE", self._object_path(resource, name, namespace), body=options))

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int = 300,
    ) -> Iterator[WatchEvent]:
        """Changes to matching objects after `resource_version` until the server ends the watch (after
        `timeout_seconds`). Without a resource version the server first sends every current object as ADDED.
        Raises Gone when the resource version is too old to resume from."""
        query: Query = {
            "watch": True,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "resourceVersion": resource_version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": timeout_seconds,
        }
        with self._http.stream(
            resource.path(namespace), query=query, read_timeout=timeout_seconds + _WATCH_SLACK
        ) as lines:
            yield from parse_events(lines)
