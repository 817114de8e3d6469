"""Events on the Node, aggregated: the same fault again makes one Event whose `count` grows.

The monitor reports each fault it sees as a core/v1 Event on its Node (namespace `default`, where a Node's events
live; `involvedObject` the Node; `reason` the condition reason; `source.component` `gpu-health-monitor`). As
client-go's EventCorrelator does (k8s.io/client-go tools/record events_cache.go `eventLogger.eventObserve`), an
Event with the same type, reason and message as one already written is not created again: its `count` and
`lastTimestamp` are patched. Unlike client-go, the repeats are summed and written at most once per `interval`
per Event, and every write takes a token from the monitor's event bucket (burst, then a steady rate), so ten
thousand identical XIDs make one create and a few count patches. An Event the API server has let expire (its TTL)
is created again.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gpu_operator.agents.health_monitor.ratelimit import TokenBucket
from gpu_operator.agents.kube import EVENTS, KubeClient, KubeError, NotFound

__all__ = ["EVENT_NAMESPACE", "SOURCE", "EventRecorder", "rfc3339"]

_log = logging.getLogger(__name__)
EVENT_NAMESPACE = "default"
SOURCE = "gpu-health-monitor"
#: Past this many Events waiting for a token, new ones are dropped (logged): a flood must not grow memory.
_MAX_QUEUED = 1000
#: An Event quiet this long is forgotten (the API server's default event TTL): a repeat creates a new one.
_FORGET_AFTER = 3600.0
#: After a failed write, the next waits this long.
_RETRY_SECONDS = 1.0


def rfc3339(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Aggregate:
    type: str
    reason: str
    message: str
    name: str | None = None
    count: int = 0
    written: int = 0
    first: float = 0.0
    last: float = 0.0
    last_write: float = float("-inf")


class EventRecorder:
    """Records Events for one Node; :meth:`flush` writes what is due (the publisher calls it)."""

    def __init__(self, client: KubeClient, node: str, bucket: TokenBucket, *, interval: float = 10.0,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._client, self._node, self._bucket, self._interval = client, node, bucket, interval
        self._clock, self._monotonic = clock, monotonic
        self._uid: str | None = None
        self._events: dict[tuple[str, str, str], _Aggregate] = {}
        self._lock = threading.Lock()
        self._blocked_until = float("-inf")
        #: Called after each occurrence is recorded (the publisher's wake-up, which writes what is due).
        self.on_record: Callable[[], None] = lambda: None

    def node_uid(self, uid: str | None) -> None:
        self._uid = uid

    def record(self, event_type: str, reason: str, message: str) -> None:
        """One more occurrence of an Event (type `Normal` or `Warning`)."""
        key = (event_type, reason, message)
        now = self._clock()
        with self._lock:
            aggregate = self._events.get(key)
            if aggregate is None:
                if sum(1 for a in self._events.values() if a.name is None) >= _MAX_QUEUED:
                    _log.warning("dropping event %s %s: too many events wait to be written", reason, message)
                    return
                aggregate = self._events[key] = _Aggregate(event_type, reason, message, first=now)
            aggregate.count += 1
            aggregate.last = now
        self.on_record()

    def _due(self) -> list[_Aggregate]:
        now = self._monotonic()
        with self._lock:
            return [a for a in self._events.values()
                    if a.count > a.written and (a.name is None or now - a.last_write >= self._interval)]

    def next_due(self) -> float | None:
        """Seconds until the next write is due and a token is there for it (None: nothing waits)."""
        now = self._monotonic()
        with self._lock:
            waits = [0.0 if a.name is None else max(0.0, self._interval - (now - a.last_write))
                     for a in self._events.values() if a.count > a.written]
        if not waits:
            return None
        return max(min(waits), self._bucket.wait_time(), self._blocked_until - now)

    def _forget_quiet(self) -> None:
        now = self._clock()
        with self._lock:
            for key in [k for k, a in self._events.items() if a.count == a.written and now - a.last > _FORGET_AFTER]:
                del self._events[key]

    def flush(self) -> None:
        """Write the Events that are due, as far as the bucket allows."""
        self._forget_quiet()
        if self._monotonic() < self._blocked_until:
            return
        for aggregate in self._due():
            if not self._bucket.take():
                return
            try:
                self._write(aggregate)
            except KubeError as error:
                _log.warning("event %s on node %s not written: %s", aggregate.reason, self._node, error)
                self._blocked_until = self._monotonic() + _RETRY_SECONDS
                return

    def _write(self, aggregate: _Aggregate) -> None:
        with self._lock:
            count, last = aggregate.count, aggregate.last
        if aggregate.name is not None:
            try:
                self._client.patch(EVENTS, aggregate.name, {"count": count, "lastTimestamp": rfc3339(last)},
                                   EVENT_NAMESPACE)
            except NotFound:
                aggregate.name = None  # expired (the API server's event TTL): a new one
        if aggregate.name is None:
            created = self._client.create(EVENTS, self._body(aggregate, count, last), EVENT_NAMESPACE)
            aggregate.name = created["metadata"]["name"]
        aggregate.written, aggregate.last_write = count, self._monotonic()

    def _body(self, aggregate: _Aggregate, count: int, last: float) -> dict[str, Any]:
        involved = {"apiVersion": "v1", "kind": "Node", "name": self._node}
        if self._uid:
            involved["uid"] = self._uid
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{self._node}.{secrets.token_hex(8)}", "namespace": EVENT_NAMESPACE},
            "involvedObject": involved,
            "reason": aggregate.reason,
            "message": aggregate.message,
            "type": aggregate.type,
            "count": count,
            "firstTimestamp": rfc3339(aggregate.first),
            "lastTimestamp": rfc3339(last),
            "source": {"component": SOURCE, "host": self._node},
            "reportingComponent": SOURCE,
            "reportingInstance": self._node,
        }
