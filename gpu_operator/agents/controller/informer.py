"""Watches that keep an in-memory copy of a resource and wake the reconcile loop on every change.

Each informer lists its resource once (replacing its copy: objects deleted while the watch was down go too), then
watches from the list's resourceVersion with lightkube. When the watch fails (the API server restarts, the
resourceVersion expired with `410 Gone`, a network error) it waits with exponential backoff (at most 8 s, so a
restarted API server is seen again within seconds) and lists again; it never gives up. A resync lists again on a
timer as well, the way client-go's informers resync, so a missed event is repaired.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpx2
import msgspec
from lightkube import Client
from lightkube.core import decoders

from gpu_operator.agents.kube.errors import kube_error

__all__ = ["Informer", "warm_decoders"]

_LOG = logging.getLogger(__name__)
_BACKOFF_START, _BACKOFF_MAX = 0.5, 8.0


def warm_decoders(resources: Iterable[type]) -> None:
    """Build lightkube's msgspec decoders of `resources` (objects and lists) in the calling thread.

    msgspec builds a type's decoding tables on its first decode and caches them on the type; two threads doing
    that first decode at once crash the process (seen here as SIGSEGV in `decode_list`). Every type the
    controller's threads decode is therefore decoded once, from the main thread, before any of them starts.
    """
    decoders.decode_watch_event(b'{"type": "ADDED", "object": {}}')
    decoders.decode_status(b'{"code": 200}')
    for resource in resources:
        # the tables are built before the fields are checked: a minimal object that fails still builds them
        with contextlib.suppress(msgspec.ValidationError):
            decoders.decode_object(b'{"metadata": {"name": "warm-up"}}', resource)
        decoders.decode_list(b'{"items": [], "metadata": {}}', resource)


def _reason(error: Exception) -> str:
    return str(kube_error(error)) if isinstance(error, httpx2.HTTPError) else f"{type(error).__name__}: {error}"


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class Informer:
    """A watched copy of one resource (optionally in one namespace, with a label selector)."""

    def __init__(self, client: Client, resource: type, wake: threading.Event, *, namespace: str | None = None,
                 labels: Mapping[str, Any] | None = None, resync_seconds: float = 300.0) -> None:
        self._client, self._resource, self._wake = client, resource, wake
        self._namespace, self._labels, self._resync = namespace, labels, resync_seconds
        self._objects: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.synced = threading.Event()
        self._stop = threading.Event()
        self.name = resource.__name__
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def items(self) -> list[Any]:
        with self._lock:
            return list(self._objects.values())

    def _list(self) -> str:
        kwargs: dict[str, Any] = {"labels": self._labels} if self._labels else {}
        if self._namespace is not None:
            kwargs["namespace"] = self._namespace
        listing = self._client.list(self._resource, **kwargs)
        objects = {_key(obj): obj for obj in listing}
        with self._lock:
            self._objects = objects
        self.synced.set()
        self._wake.set()
        return listing.resourceVersion

    def _watch(self, version: str) -> None:
        kwargs: dict[str, Any] = {"labels": self._labels} if self._labels else {}
        if self._namespace is not None:
            kwargs["namespace"] = self._namespace
        deadline = time.monotonic() + self._resync
        events = self._client.watch(self._resource, resource_version=version, server_timeout=max(1, int(self._resync)),
                                    **kwargs)
        for kind, obj in events:
            with self._lock:
                if kind == "DELETED":
                    self._objects.pop(_key(obj), None)
                else:
                    self._objects[_key(obj)] = obj
            self._wake.set()
            if self._stop.is_set() or time.monotonic() >= deadline:
                return

    def _run(self) -> None:
        backoff = _BACKOFF_START
        while not self._stop.is_set():
            try:
                self._watch(self._list())
                backoff = _BACKOFF_START
            except Exception as error:  # any failure of the API: back off, then list again
                _LOG.warning("watch of %s failed (%s); listing again in %.1f s", self.name, _reason(error), backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
