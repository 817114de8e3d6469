"""Server-side apply of rendered objects, exactly as rendered, through lightkube.

lightkube's typed models would drop a field they do not know, so an object we render with a misspelt field would
reach the API server without it and pass. Here every object travels as the plain dict the render produced, in a
generic lightkube resource class named after its kind (plural and scope from lightkube's built-in registry, or
from the CustomResourceDefinitions applied before it). Failures are collected, not raised one by one, so a test
reports every object the API server refused, with the server's message.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lightkube import ApiError, Client
from lightkube.core import resource as lk_resource
from lightkube.core.resource_registry import resource_registry
from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource, create_api_info
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace

__all__ = ["ApplyFailure", "KindTable", "ensure_namespaces", "object_id", "server_side_apply", "wait_established"]

Object = dict[str, Any]


def object_id(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata", {})
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


@dataclass(frozen=True)
class ApplyFailure:
    """An object the API server refused, and why (status code and message as served)."""

    object: str
    code: int
    message: str

    def __str__(self) -> str:
        return f"{self.object}: HTTP {self.code}: {self.message}"


@cache
def _raw_class(api_version: str, kind: str, plural: str, namespaced: bool) -> type:
    group, _, version = api_version.rpartition("/")
    base = GenericNamespacedResource if namespaced else GenericGlobalResource
    return type(kind, (base,), {"_api_info": create_api_info(group, version, kind, plural)})


@dataclass
class KindTable:
    """Plural and scope per (apiVersion, kind): lightkube's built-ins, plus every CRD seen."""

    custom: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)

    def learn(self, objects: Iterable[Mapping[str, Any]]) -> None:
        for obj in objects:
            if obj.get("kind") != "CustomResourceDefinition":
                continue
            spec = obj["spec"]
            for version in spec["versions"]:
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                self.custom[key] = (spec["names"]["plural"], spec["scope"] == "Namespaced")

    def resource(self, obj: Mapping[str, Any]) -> type:
        key = (obj["apiVersion"], obj["kind"])
        if key in self.custom:
            plural, namespaced = self.custom[key]
        else:
            model = resource_registry.load(*key)
            if model is None:
                raise KeyError(f"no resource known for {key[0]} {key[1]}: apply its CustomResourceDefinition first")
            plural, namespaced = model._api_info.plural, issubclass(model, lk_resource.NamespacedResource)
        return _raw_class(key[0], key[1], plural, namespaced)


def server_side_apply(
    client: Client, objects: Iterable[Object], kinds: KindTable, *, dry_run: bool, field_manager: str = "e2e"
) -> list[ApplyFailure]:
    """Apply each object (forcing conflicts, as `kubectl apply --server-side --force-conflicts`); the refusals."""
    failures = []
    for obj in objects:
        try:
            instance = kinds.resource(obj)(obj)
            namespace = obj["metadata"].get("namespace")
            client.apply(instance, namespace=namespace, field_manager=field_manager, force=True, dry_run=dry_run)
        except ApiError as error:
            failures.append(ApplyFailure(object_id(obj), error.status.code or 0, error.status.message or str(error)))
        except KeyError as error:
            failures.append(ApplyFailure(object_id(obj), 0, str(error)))
    return failures


def ensure_namespaces(client: Client, objects: Iterable[Object]) -> None:
    """Create (for real, bare) every namespace the objects live in or declare: a dry-run Namespace does not exist
    for the dry-run objects in it."""
    objects = list(objects)
    names = {obj["metadata"]["namespace"] for obj in objects if obj["metadata"].get("namespace")}
    names |= {obj["metadata"]["name"] for obj in objects if obj["kind"] == "Namespace"}
    for name in sorted(names):
        try:
            client.create(Namespace(metadata=ObjectMeta(name=name)))
        except ApiError as error:
            if error.status.code != 409:
                raise


def wait_established(client: Client, names: Iterable[str], timeout: float = 60.0) -> None:
    """Wait until each CustomResourceDefinition is Established (its API is served)."""
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = client.get(CustomResourceDefinition, name)
            conditions = {c.type: c.status for c in (crd.status.conditions or [])} if crd.status else {}
            if conditions.get("Established") == "True":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CustomResourceDefinition {name} not Established within {timeout:.0f}s")
            time.sleep(0.2)
