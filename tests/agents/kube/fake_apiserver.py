"""A small in-memory Kubernetes API server for tests: the REST paths, in a thread, over real HTTP.

It stores objects per resource type and serves what the agents use: get, list (label and field selectors,
pagination), create (`generateName`, AlreadyExists), replace (resourceVersion conflicts), patch (JSON merge,
strategic merge as merge except that `conditions` lists merge by `type` as the API server's do, JSON patch; the
`status` subresource), delete (options in the query)
and watch (chunked JSON lines; synthetic ADDED events without a resourceVersion; 410 Expired before the
compacted version). Errors are `Status` objects with the API's reasons.

Tests steer it: `add` seeds objects, `update` changes one as a controller would (emitting MODIFIED),
`fail`/`drop` inject error answers or dropped connections for matching requests, `on_create` reacts to new
objects (`simulate_pods` plays kubelet, moving new pods through Pending -> Running -> a final phase), and
`requests` records every request for assertions. `token=` requires that bearer token. The agents' client
(lightkube, through `gpu_operator.agents.kube`) talks to it as to a real API server: `client()` makes one.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from lightkube import KubeConfig
from lightkube.config.models import Cluster, User

from gpu_operator.agents.kube import KubeClient, RetryPolicy
from tests.support.http_servers import QuietThreadingHTTPServer

__all__ = ["FAST_RETRY", "FakeApiServer", "RecordedRequest", "ResourceType"]

Object = dict[str, Any]

#: Retries without real waiting, for clients talking to the fake server.
FAST_RETRY = RetryPolicy(attempts=4, initial_delay=0.001, max_delay=0.002, max_retry_after=0.002, jitter=0.0)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


DEFAULT_TYPES = (
    ResourceType("", "v1", "pods", "Pod", True),
    ResourceType("", "v1", "nodes", "Node", False),
    ResourceType("", "v1", "namespaces", "Namespace", False),
    ResourceType("", "v1", "configmaps", "ConfigMap", True),
    ResourceType("", "v1", "events", "Event", True),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True),
    ResourceType("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", "NodeFeature", True),
    ResourceType("gpu.pulumi-gpu-operator.io", "v1alpha1", "gpudevices", "GpuDevice", False),
)


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    times: int
    status: int = 0
    reason: str = ""
    retry_after: str | None = None
    drop: bool = False
    text: str | None = None
    """A plain-text body instead of a Status (what kube-apiserver's own filters answer, e.g. when throttling)."""

    def matches(self, method: str, path: str) -> bool:
        return self.times > 0 and self.method in ("*", method) and bool(self.pattern.search(path))


@dataclass
class _Event:
    version: int
    type: str
    resource: ResourceType
    object: Object


@dataclass
class _Target:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


class _Rejected(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


# selectors ---------------------------------------------------------------------------------------------------


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        terms.append(current.strip())
    return terms


def _label_term(term: str) -> Callable[[Mapping[str, str]], bool]:
    if match := re.fullmatch(r"(\S+)\s+(in|notin)\s+\((.*)\)", term):
        key, operator, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := re.fullmatch(r"(\S+?)\s*(==|!=|=)\s*(\S*)", term):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        return lambda labels: term[1:] not in labels
    return lambda labels: term in labels


def label_matcher(selector: str | None) -> Callable[[Object], bool]:
    terms = [_label_term(t) for t in _split_terms(selector or "")]
    return lambda obj: all(t(obj.get("metadata", {}).get("labels") or {}) for t in terms)


def _field(obj: Object, dotted: str) -> str:
    value: Any = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def field_matcher(selector: str | None) -> Callable[[Object], bool]:
    checks = []
    for term in _split_terms(selector or ""):
        match = re.fullmatch(r"(\S+?)\s*(==|!=|=)\s*(\S*)", term)
        if match is None:
            raise _Rejected(400, "BadRequest", f"invalid field selector {term!r}")
        path, operator, value = match.groups()
        checks.append((path, operator == "!=", value))
    return lambda obj: all((_field(obj, path) == value) != negate for path, negate, value in checks)


# patches -----------------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


#: List fields a strategic merge patch merges item by item, by this key (the API's `patchMergeKey`).
STRATEGIC_MERGE_KEYS = {"conditions": "type"}


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch: a merge patch whose keyed lists (:data:`STRATEGIC_MERGE_KEYS`) merge by key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        merge_key = STRATEGIC_MERGE_KEYS.get(key)
        if value is None:
            result.pop(key, None)
        elif merge_key is not None and isinstance(value, list) and isinstance(result.get(key), list):
            merged = {item.get(merge_key): item for item in result[key]}
            for item in value:
                found = merged.get(item.get(merge_key))
                merged[item.get(merge_key)] = strategic_merge_patch(found, item) if found else copy.deepcopy(item)
            result[key] = list(merged.values())
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _resolve(document: Any, parts: list[str]) -> Any:
    for part in parts:
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _put(document: Any, parts: list[str], value: Any, insert: bool) -> None:
    parent, last = _resolve(document, parts[:-1]), parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if insert:
            parent.insert(index, value)
        else:
            parent[index] = value
    else:
        if not insert and last not in parent:
            raise KeyError(last)
        parent[last] = value


def _remove(document: Any, parts: list[str]) -> Any:
    parent, last = _resolve(document, parts[:-1]), parts[-1]
    return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)


def json_patch(target: Object, operations: list[Object]) -> Object:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    document = copy.deepcopy(target)
    for operation in operations:
        op, parts = operation["op"], _pointer(operation["path"])
        if op == "add":
            _put(document, parts, copy.deepcopy(operation["value"]), insert=True)
        elif op == "remove":
            _remove(document, parts)
        elif op == "replace":
            _put(document, parts, copy.deepcopy(operation["value"]), insert=False)
        elif op == "move":
            _put(document, parts, _remove(document, _pointer(operation["from"])), insert=True)
        elif op == "copy":
            _put(document, parts, copy.deepcopy(_resolve(document, _pointer(operation["from"]))), insert=True)
        elif op == "test":
            if _resolve(document, parts) != operation["value"]:
                raise _Rejected(422, "Invalid", f"test operation failed at {operation['path']}")
        else:
            raise _Rejected(400, "BadRequest", f"unknown JSON patch operation {op!r}")
    return document


def _status(status: int, reason: str, message: str) -> Object:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": status,
    }


# the server --------------------------------------------------------------------------------------------------


class FakeApiServer:
    """An in-memory API server on 127.0.0.1 (a context manager that starts and stops it)."""

    def __init__(self, *, token: str | None = None, watch_timeout: float = 30.0):
        self.token = token
        self.requests: list[RecordedRequest] = []
        self._watch_timeout = watch_timeout
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._store: dict[tuple[str, str, str, str], Object] = {}
        self._events: list[_Event] = []
        self._version = itertools.count(1)
        self._last_version = 0
        self._compacted = 0
        self._faults: list[_Fault] = []
        self._reactions: dict[str, list[Callable[[FakeApiServer, Object], None]]] = {}
        self._changed = threading.Condition(threading.RLock())
        self._stopping = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timers: list[threading.Timer] = []
        for resource in DEFAULT_TYPES:
            self.register(resource)

    # lifecycle ---------------------------------------------------------------------------------------------------

    def __enter__(self) -> FakeApiServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        server = self

        class Handler(_Handler):
            api = server

        self._httpd = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-apiserver", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        for timer in self._timers:
            timer.cancel()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def client(self, *, token: str | None = None, retry: RetryPolicy = FAST_RETRY, namespace: str | None = None
               ) -> KubeClient:
        """A client for this server (the server's own token unless another is given)."""
        user = User(token=token or self.token)
        config = KubeConfig.from_one(cluster=Cluster(server=self.url), user=user, namespace=namespace)
        return KubeClient(config.get(), retry=retry, timeout=10)

    def kubeconfig(self, directory: Path, *, namespace: str = "default") -> Path:
        """A kubeconfig file pointing at this server (token auth when the server wants a token)."""
        user = {"token": self.token} if self.token else {}
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": user}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester", "namespace": namespace}}],
        }
        path = directory / "kubeconfig"
        path.write_text(yaml.safe_dump(document))
        return path

    # resource types --------------------------------------------------------------------------------------------

    def register(self, resource: ResourceType) -> None:
        self._types[(resource.group, resource.version, resource.plural)] = resource

    def _type_of(self, obj: Object) -> ResourceType:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        for resource in self._types.values():
            if resource.api_version == api_version and resource.kind == kind:
                return resource
        raise LookupError(f"no registered resource type for {api_version} {kind}")

    def _find_type(self, plural: str, group: str | None) -> ResourceType:
        found = [r for r in self._types.values() if r.plural == plural and (group is None or r.group == group)]
        if len(found) != 1:
            raise LookupError(f"resource {plural!r} (group {group!r}) is unknown or ambiguous")
        return found[0]

    # direct access for tests -----------------------------------------------------------------------------------

    @staticmethod
    def _key(resource: ResourceType, namespace: str | None, name: str) -> tuple[str, str, str, str]:
        return (resource.group, resource.plural, (namespace or "") if resource.namespaced else "", name)

    def _stamp(self, obj: Object, event: str, resource: ResourceType) -> Object:
        version = next(self._version)
        self._last_version = version
        obj.setdefault("metadata", {})["resourceVersion"] = str(version)
        self._events.append(_Event(version, event, resource, copy.deepcopy(obj)))
        self._changed.notify_all()
        return obj

    def add(self, obj: Object) -> Object:
        """Store an object as if it had been created (uid, resourceVersion, creationTimestamp filled in)."""
        resource = self._type_of(obj)
        stored = copy.deepcopy(obj)
        metadata = stored.setdefault("metadata", {})
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", _now())
        if resource.namespaced:
            metadata.setdefault("namespace", "default")
        with self._changed:
            self._store[self._key(resource, metadata.get("namespace"), metadata["name"])] = stored
            self._stamp(stored, "ADDED", resource)
            return copy.deepcopy(stored)

    def get(self, plural: str, name: str, namespace: str | None = None, *, group: str | None = None) -> Object | None:
        resource = self._find_type(plural, group)
        with self._changed:
            found = self._store.get(self._key(resource, namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def objects(self, plural: str, namespace: str | None = None, *, group: str | None = None) -> list[Object]:
        resource = self._find_type(plural, group)
        with self._changed:
            return [
                copy.deepcopy(o)
                for k, o in sorted(self._store.items())
                if k[:2] == (resource.group, resource.plural) and (namespace is None or k[2] == namespace)
            ]

    def update(
        self,
        plural: str,
        name: str,
        namespace: str | None,
        change: Callable[[Object], None],
        *,
        group: str | None = None,
    ) -> Object:
        """Change a stored object in place (as a controller would) and emit MODIFIED."""
        resource = self._find_type(plural, group)
        with self._changed:
            stored = self._store[self._key(resource, namespace, name)]
            change(stored)
            return copy.deepcopy(self._stamp(stored, "MODIFIED", resource))

    def remove(self, plural: str, name: str, namespace: str | None = None, *, group: str | None = None) -> None:
        resource = self._find_type(plural, group)
        with self._changed:
            stored = self._store.pop(self._key(resource, namespace, name))
            self._stamp(stored, "DELETED", resource)

    def compact(self) -> None:
        """Forget the event history: watches from an older resourceVersion get 410 Expired."""
        with self._changed:
            self._compacted = self._last_version
            self._events.clear()

    def later(self, delay: float, action: Callable[[], None]) -> None:
        """Run `action` on a timer thread (cancelled when the server stops)."""
        timer = threading.Timer(delay, action)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    # steering ----------------------------------------------------------------------------------------------------

    def fail(
        self, method: str, path: str, status: int, *, times: int = 1, reason: str = "", retry_after: str | None = None,
        text: str | None = None,
    ) -> None:
        """Answer the next `times` matching requests (`path` is a regex) with an error status (a Status, or `text`)."""
        self._faults.append(_Fault(method, re.compile(path), times, status, reason, retry_after, text=text))

    def drop(self, method: str, path: str, *, times: int = 1) -> None:
        """Close the connection without answering the next `times` matching requests."""
        self._faults.append(_Fault(method, re.compile(path), times, drop=True))

    def on_create(self, plural: str, reaction: Callable[[FakeApiServer, Object], None]) -> None:
        self._reactions.setdefault(plural, []).append(reaction)

    def simulate_pods(self, final_phase: str = "Succeeded", *, delay: float = 0.02) -> None:
        """Play kubelet: every new pod becomes Running, then `final_phase`, `delay` seconds apart."""

        def progress(server: FakeApiServer, pod: Object) -> None:
            name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]

            def to(phase: str) -> Callable[[], None]:
                def apply() -> None:
                    if server.get("pods", name, namespace) is not None:
                        server.update("pods", name, namespace, lambda o: o.setdefault("status", {}).update(phase=phase))

                return apply

            server.later(delay, to("Running"))
            server.later(2 * delay, to(final_phase))

        self.on_create("pods", progress)

    def requests_to(self, method: str, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and re.search(path, r.path)]

    # request handling (called by the handler) ------------------------------------------------------------------

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._changed:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    return fault
        return None

    def _target(self, path: str) -> _Target:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise _Rejected(404, "NotFound", f"the server could not find the requested resource ({path})")
        namespaced = len(rest) >= 3 and rest[0] == "namespaces" and (group, version, rest[2]) in self._types
        namespace, rest = (rest[1], rest[2:]) if namespaced else (None, rest)
        resource = self._types.get((group, version, rest[0])) if rest else None
        if resource is None or (namespace is not None and not resource.namespaced):
            raise _Rejected(404, "NotFound", f"the server could not find the requested resource ({path})")
        if resource.namespaced and namespace is None and len(rest) > 1:
            raise _Rejected(404, "NotFound", f"the server could not find the requested resource ({path})")
        return _Target(resource, namespace, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None)

    def _existing(self, target: _Target) -> Object:
        assert target.name is not None
        found = self._store.get(self._key(target.resource, target.namespace, target.name))
        if found is None:
            raise _Rejected(404, "NotFound", f'{target.resource.plural} "{target.name}" not found')
        return found

    def _matching(self, target: _Target, query: Mapping[str, str]) -> Callable[[ResourceType, Object], bool]:
        labels, fields = label_matcher(query.get("labelSelector")), field_matcher(query.get("fieldSelector"))

        def matches(resource: ResourceType, obj: Object) -> bool:
            namespace = obj.get("metadata", {}).get("namespace")
            return (
                resource == target.resource
                and (target.namespace is None or namespace == target.namespace)
                and labels(obj)
                and fields(obj)
            )

        return matches

    def handle_get(self, target: _Target, query: Mapping[str, str]) -> Object:
        with self._changed:
            if target.name is not None:
                return copy.deepcopy(self._existing(target))
            matches = self._matching(target, query)
            items = [copy.deepcopy(o) for _, o in sorted(self._store.items()) if matches(self._type_of(o), o)]
            start = int(query.get("continue") or 0)
            limit = int(query.get("limit") or 0) or len(items)
            page, more = items[start : start + limit], start + limit < len(items)
            metadata: Object = {"resourceVersion": str(self._last_version)}
            if more:
                metadata["continue"] = str(start + limit)
            kind = f"{target.resource.kind}List"
            return {"kind": kind, "apiVersion": target.resource.api_version, "metadata": metadata, "items": page}

    def handle_create(self, target: _Target, body: Object) -> Object:
        resource = target.resource
        obj = copy.deepcopy(body)
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        metadata = obj.setdefault("metadata", {})
        if resource.namespaced:
            if metadata.get("namespace", target.namespace) != target.namespace:
                raise _Rejected(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            metadata["namespace"] = target.namespace
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise _Rejected(422, "Invalid", "metadata.name: Required value: name or generateName is required")
            metadata["name"] = metadata["generateName"] + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
        with self._changed:
            key = self._key(resource, target.namespace, metadata["name"])
            if key in self._store:
                raise _Rejected(409, "AlreadyExists", f'{resource.plural} "{metadata["name"]}" already exists')
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = _now()
            metadata["generation"] = 1
            if resource.kind == "Pod":
                obj.setdefault("status", {"phase": "Pending"})
            self._store[key] = obj
            created = copy.deepcopy(self._stamp(obj, "ADDED", resource))
        for reaction in self._reactions.get(resource.plural, []):
            reaction(self, copy.deepcopy(created))
        return created

    def _store_change(self, target: _Target, changed: Object) -> Object:
        current = self._existing(target)
        if target.subresource == "status":
            updated = copy.deepcopy(current)
            updated["status"] = changed.get("status", {})
        else:
            updated = changed
            for kept in ("uid", "creationTimestamp", "namespace", "name"):
                if kept in current["metadata"]:
                    updated.setdefault("metadata", {})[kept] = current["metadata"][kept]
            if target.resource.kind == "Pod" and "status" in current and "status" not in updated:
                updated["status"] = current["status"]
        self._store[self._key(target.resource, target.namespace, target.name or "")] = updated
        return copy.deepcopy(self._stamp(updated, "MODIFIED", target.resource))

    def handle_replace(self, target: _Target, body: Object) -> Object:
        with self._changed:
            current = self._existing(target)
            sent = body.get("metadata", {}).get("resourceVersion")
            if sent and sent != current["metadata"]["resourceVersion"]:
                raise _Rejected(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {target.resource.plural} "{target.name}": '
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            return self._store_change(target, copy.deepcopy(body))

    def handle_patch(self, target: _Target, body: Any, content_type: str) -> Object:
        with self._changed:
            current = self._existing(target)
            if content_type == "application/merge-patch+json":
                patched = merge_patch(current, body)
            elif content_type == "application/strategic-merge-patch+json":
                patched = strategic_merge_patch(current, body)
            elif content_type == "application/json-patch+json":
                try:
                    patched = json_patch(current, body)
                except (KeyError, IndexError, ValueError, TypeError) as error:
                    raise _Rejected(422, "Invalid", f"the JSON patch cannot be applied: {error}") from error
            else:
                raise _Rejected(
                    415, "UnsupportedMediaType", f"the patch content type {content_type!r} is not supported"
                )
            return self._store_change(target, patched)

    def handle_eviction(self, target: _Target) -> Object:
        """The Eviction API without disruption budgets: the pod starts its graceful deletion (a deletion
        timestamp; `remove` or a kubelet simulation ends it)."""
        with self._changed:
            current = self._existing(_Target(target.resource, target.namespace, target.name, None))
            current["metadata"].setdefault("deletionTimestamp", _now())
            self._stamp(current, "MODIFIED", target.resource)
            return _status(201, "", "evicted") | {"status": "Success"}

    def handle_delete(self, target: _Target) -> Object:
        with self._changed:
            current = self._existing(target)
            del self._store[self._key(target.resource, target.namespace, target.name or "")]
            return copy.deepcopy(self._stamp(current, "DELETED", target.resource))

    def watch_events(self, target: _Target, query: Mapping[str, str]) -> Iterator[Object]:
        """The events a watch request sees, until its timeout or the server stops."""
        matches = self._matching(target, query)
        timeout = float(query.get("timeoutSeconds") or self._watch_timeout)
        deadline = time.monotonic() + min(timeout, self._watch_timeout)
        since = query.get("resourceVersion") or ""
        with self._changed:
            if since not in ("", "0") and int(since) < self._compacted:
                yield {
                    "type": "ERROR",
                    "object": _status(410, "Expired", f"too old resource version: {since} ({self._compacted})"),
                }
                return
            if since in ("", "0"):
                initial = [copy.deepcopy(o) for _, o in sorted(self._store.items()) if matches(self._type_of(o), o)]
                position = self._last_version
            else:
                initial, position = [], int(since)
        for obj in initial:
            yield {"type": "ADDED", "object": obj}
        while True:
            with self._changed:
                pending = [e for e in self._events if e.version > position]
                while not pending and not self._stopping and time.monotonic() < deadline:
                    self._changed.wait(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
                    pending = [e for e in self._events if e.version > position]
                if self._stopping or not pending:
                    return
                position = pending[-1].version
                selected = [copy.deepcopy(e) for e in pending if matches(e.resource, e.object)]
            for event in selected:
                yield {"type": event.type, "object": event.object}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Handler(BaseHTTPRequestHandler):
    api: FakeApiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, body: Object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str, retry_after: str | None) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw.strip() else None

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        body = self._body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.api.requests.append(RecordedRequest(method, parts.path, query, headers, body))
        fault = self.api._take_fault(method, parts.path)
        if fault is not None and fault.drop:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if fault is not None and fault.text is not None:
            self._send_text(fault.status, fault.text, fault.retry_after)
            return
        if fault is not None:
            extra = {"Retry-After": fault.retry_after} if fault.retry_after else None
            reason = fault.reason or {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}.get(
                fault.status, ""
            )
            self._send(fault.status, _status(fault.status, reason, "injected failure"), extra)
            return
        if self.api.token and headers.get("authorization") != f"Bearer {self.api.token}":
            self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            return
        try:
            target = self.api._target(parts.path)
            if method == "GET" and target.name is None and query.get("watch") in ("true", "1"):
                self._stream(self.api.watch_events(target, query))
                return
            status, answer = self._dispatch(method, target, query, body)
        except _Rejected as rejected:
            self._send(rejected.status, _status(rejected.status, rejected.reason, rejected.message))
            return
        self._send(status, answer)

    def _dispatch(self, method: str, target: _Target, query: Mapping[str, str], body: Any) -> tuple[int, Object]:
        if method == "GET":
            return 200, self.api.handle_get(target, query)
        if method == "POST" and target.name is None:
            return 201, self.api.handle_create(target, body or {})
        if method == "POST" and target.subresource == "eviction":
            return 201, self.api.handle_eviction(target)
        if method == "PUT" and target.name is not None:
            return 200, self.api.handle_replace(target, body or {})
        if method == "PATCH" and target.name is not None:
            return 200, self.api.handle_patch(target, body, self.headers.get("Content-Type", ""))
        if method == "DELETE" and target.name is not None:
            return 200, self.api.handle_delete(target)
        raise _Rejected(405, "MethodNotAllowed", f"{method} is not supported on {self.path}")

    def _stream(self, events: Iterator[Object]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")
