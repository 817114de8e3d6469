"""The last collected state of an exporter: a pre-rendered scrape body and a health verdict.

Collection runs on its own schedule, in a background thread; a scrape only hands out the body of the latest
snapshot, so it costs the same whatever the number of GPUs and never touches NVML. `SnapshotHolder` is the
hand-over point: the collector `publish`es a new snapshot (or only a new health verdict, when collection
failed and the last good body must keep being served), scrapes read `current()`. Publishing replaces one
reference, so readers never wait for the collector.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

__all__ = ["HEALTHY", "Health", "Snapshot", "SnapshotHolder"]


@dataclass(frozen=True, slots=True)
class Health:
    """Whether the exporter is sound, and why not (one reason per line of the /health body).

    `ok` with reasons is *degraded*: the exporter works but reports less than the node has (a lost GPU). The
    DaemonSet's probes hit /health, and restarting the exporter cannot bring a GPU back while it would stop the
    metrics of every healthy GPU, so a degraded exporter still answers 200 and names the problem in the body;
    only an exporter that cannot collect at all answers 503.
    """

    ok: bool
    reasons: tuple[str, ...] = ()

    @classmethod
    def failing(cls, *reasons: str) -> Health:
        return cls(False, tuple(reasons))

    @classmethod
    def degraded(cls, *reasons: str) -> Health:
        return cls(True, tuple(reasons))


HEALTHY = Health(True)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A scrape body, the health that goes with it, and when the body was collected (Unix seconds)."""

    body: bytes
    health: Health = HEALTHY
    collected_at: float | None = None


class SnapshotHolder:
    """The current snapshot, swapped atomically. Starts with an empty body until the first collection."""

    def __init__(self, initial: Snapshot | None = None) -> None:
        self._current = initial or Snapshot(b"", Health.failing("no collection has completed yet"))
        self._write = threading.Lock()

    def current(self) -> Snapshot:
        return self._current

    def publish(self, snapshot: Snapshot) -> None:
        with self._write:
            self._current = snapshot

    def set_health(self, health: Health) -> None:
        """Keep the last body, change only the verdict (collection failed, a GPU was lost, ...)."""
        with self._write:
            self._current = replace(self._current, health=health)
