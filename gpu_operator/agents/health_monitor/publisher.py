"""Writing the conditions: batched, rate-limited, and only what the Node does not already show.

A thread waits for the fault book to change (or a heartbeat, or an Event to write), collects changes for a short
batch window, then compares every condition of ours with the Node's copy (:func:`.conditions.condition_changes`)
and writes the ones that differ in one strategic merge patch of `nodes/status`, as NPD's condition manager does
(its sync loop: changes are collected and synced at most once per update period; a forced sync every heartbeat
period). Each write takes a token from the condition bucket; without one, the changes wait and fold into the next
write. A write that fails is tried again after a second; nothing is lost, since the book still holds the truth.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from gpu_operator.agents.health_monitor.book import FaultBook
from gpu_operator.agents.health_monitor.conditions import condition_changes, desired_conditions, status_patch
from gpu_operator.agents.health_monitor.events import EventRecorder, rfc3339
from gpu_operator.agents.health_monitor.node_view import NodeView
from gpu_operator.agents.health_monitor.ratelimit import TokenBucket
from gpu_operator.agents.kube import NODES, KubeClient, KubeError, PatchType

__all__ = ["ConditionPublisher"]

_log = logging.getLogger(__name__)
_RETRY_SECONDS = 1.0


class ConditionPublisher:
    """Keeps the Node's conditions equal to the book; `wake()` after a change, `start()`/`stop()` the thread."""

    def __init__(self, client: KubeClient, node: str, book: FaultBook, view: NodeView, bucket: TokenBucket,
                 events: EventRecorder, *, heartbeat: float, batch_seconds: float,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._client, self._node, self._book, self._view = client, node, book, view
        self._bucket, self._events = bucket, events
        self._heartbeat, self._batch = heartbeat, batch_seconds
        self._clock, self._monotonic = clock, monotonic
        self._last_write = monotonic()
        self._retry_at: float | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._writing = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="health-monitor-publisher", daemon=True)
        self.writes = 0

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def sync(self, *, bypass_bucket: bool = False) -> bool:
        """Write what differs now (all of ours when a heartbeat is due); True when the Node is in step.
        `bypass_bucket`: the monitor's own start, which must not wait behind the bucket."""
        with self._writing:
            return self._sync(bypass_bucket)

    def _sync(self, bypass_bucket: bool) -> bool:
        now = self._monotonic()
        due = now - self._last_write >= self._heartbeat
        changes = condition_changes(self._view.conditions(), desired_conditions(self._book.findings()),
                                    rfc3339(self._clock()), heartbeat=due)
        if not changes:
            return True
        if not bypass_bucket and not self._bucket.take():
            self._retry_at = now + self._bucket.wait_time()
            return False
        try:
            node = self._client.patch(NODES, self._node, status_patch(changes), patch_type=PatchType.STRATEGIC,
                                      status=True)
        except KubeError as error:
            _log.warning("node %s: conditions not written (%s); trying again", self._node, error)
            self._retry_at = now + _RETRY_SECONDS
            return False
        self.writes += 1
        self._last_write, self._retry_at = now, None
        self._view.offer(node)
        _log.info("node %s: wrote %s", self._node,
                  ", ".join(f"{c['type']}={c['status']} ({c['reason']})" for c in changes))
        return True

    def _timeout(self) -> float:
        now = self._monotonic()
        waits = [max(0.0, self._heartbeat - (now - self._last_write))]
        if self._retry_at is not None:
            waits.append(max(0.0, self._retry_at - now))
        due = self._events.next_due()
        if due is not None:
            waits.append(due)
        return min(waits)

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            self._wake.wait(self._timeout())
            self._wake.clear()
            if self._stop.is_set():
                return
            if self._batch:
                self._stop.wait(self._batch)
            version = self._book.version
            if version != seen or self._retry_at is not None or \
                    self._monotonic() - self._last_write >= self._heartbeat:
                if self.sync():
                    seen = version
            self._events.flush()
