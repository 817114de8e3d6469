"""Collection on an interval, in the background, never blocking a scrape.

`CollectionLoop` calls the collector right away and then every `--collect-interval`, publishing each snapshot
to the holder the HTTP server reads. When a collection fails, the last good body stays published and only the
health changes - "collection failed: <error>; serving the metrics collected at <time>" (plus any reason the
last good snapshot already had) - until a later collection succeeds again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from gpu_operator.agents.exposition import Health, Snapshot, SnapshotHolder

__all__ = ["CollectionLoop", "failure_health"]

_log = logging.getLogger(__name__)


def _when(collected_at: float | None) -> str:
    if collected_at is None:
        return "no metrics were collected yet"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(collected_at))
    return f"serving the metrics collected at {stamp}"


def failure_health(error: BaseException, last: Snapshot) -> Health:
    """The verdict while collections fail: the failure, then whatever was already wrong with the last body."""
    reason = f"collection failed: {error}; {_when(last.collected_at)}"
    earlier = () if last.collected_at is None else last.health.reasons
    return Health.failing(reason, *earlier)


class CollectionLoop:
    """Runs `collect` every `interval` seconds on a daemon thread, publishing to `holder`."""

    def __init__(self, collect: Callable[[], Snapshot], holder: SnapshotHolder, interval: float) -> None:
        self._collect = collect
        self._holder = holder
        self._interval = interval
        self._last_good: Snapshot = holder.current()
        self._failures = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="collector", daemon=True)

    @property
    def failures(self) -> int:
        """Consecutive failed collections."""
        return self._failures

    def run_once(self) -> bool:
        """One collection; True when it succeeded."""
        try:
            snapshot = self._collect()
        except Exception as error:  # noqa: BLE001 - any failure must leave the last good metrics served
            self._failures += 1
            log = _log.exception if self._failures == 1 else _log.warning
            log("collection failed (%d in a row): %s", self._failures, error)
            self._holder.set_health(failure_health(error, self._last_good))
            return False
        if self._failures:
            _log.info("collection recovered after %d failures", self._failures)
        self._failures = 0
        self._last_good = snapshot
        self._holder.publish(snapshot)
        return True

    def _run(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            self.run_once()
            self._stopping.wait(max(0.0, self._interval - (time.monotonic() - started)))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
