"""Waiting for one object to reach a condition, by watching it rather than polling.

`wait_for` reads the object and, while the condition does not hold, watches it (a field selector on its name)
from the version it read, re-checking on every change. A watch that ends, breaks, or can no longer resume
(410 Expired) is replaced by a fresh read and a new watch, so the wait survives API server restarts. It ends
when the condition holds, when the object is deleted, or at the deadline.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

from gpu_operator.agents.kube.client import KubeClient
from gpu_operator.agents.kube.errors import ApiUnreachable, Gone, KubeError
from gpu_operator.agents.kube.resources import Resource

__all__ = ["ObjectDeleted", "WaitTimeout", "wait_for"]

Object = dict[str, Any]


class WaitTimeout(KubeError):
    """The condition did not hold before the deadline; `last` is the object as last seen."""

    def __init__(self, message: str, last: Object) -> None:
        super().__init__(message)
        self.last = last


class ObjectDeleted(KubeError):
    """The object was deleted while being waited for."""


def wait_for(
    client: KubeClient, resource: Resource, name: str, namespace: str | None, done: Callable[[Object], bool], *,
    timeout: float, clock: Callable[[], float] = time.monotonic,
) -> Object:
    """The object once `done(object)` is true. Raises WaitTimeout, ObjectDeleted, or what `done` raises."""
    deadline = clock() + timeout
    current = client.get(resource, name, namespace)
    while not done(current):
        remaining = deadline - clock()
        if remaining <= 0:
            raise WaitTimeout(f"{resource.kind} {name} did not get ready within {timeout:g}s", current)
        events = client.watch(
            resource, namespace, fields={"metadata.name": name},
            resource_version=current.get("metadata", {}).get("resourceVersion"),
            timeout_seconds=max(1, math.ceil(remaining)),
        )
        try:
            with closing(events):
                for kind, changed in events:
                    if kind == "DELETED":
                        raise ObjectDeleted(f"{resource.kind} {name} was deleted")
                    current = changed
                    if done(current) or clock() >= deadline:
                        break
        except (Gone, ApiUnreachable):
            current = client.get(resource, name, namespace)
    return current
