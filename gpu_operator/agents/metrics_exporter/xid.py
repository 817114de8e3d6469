"""The last XID of each GPU, from NVML's event set, for `DCGM_FI_DEV_XID_ERRORS`.

DCGM registers for XID critical-error events and keeps the XID number of the latest one per entity; before
any XID the field is 0 ("No Error"). Events of a MIG device name its GPU instance and go to that instance;
events about the whole GPU go to the GPU and to each of its instances. The series carries `err_code` (the
number) and `err_msg` (its name) labels.

:class:`XidWatch` waits for events on a daemon thread, independently of the collection interval, so an XID is
never missed between two collections; :class:`XidTracker` is what the collector reads.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from gpu_operator.agents.exposition import Labels
from gpu_operator.agents.metrics_exporter.xid_messages import xid_message
from gpu_operator.agents.nvml import DeviceEvent, EventKind, Nvml, NvmlError

__all__ = ["RETRY_SECONDS", "WAIT_MS", "XidTracker", "XidWatch", "xid_labels"]

_log = logging.getLogger(__name__)

#: How long one event wait lasts; also how quickly the watch notices it should stop.
WAIT_MS = 250
#: Pause after a failed wait before waiting again.
RETRY_SECONDS = 5.0


def xid_labels(xid: int) -> Labels:
    """The attributes of an XID series: `err_code` and `err_msg`."""
    return (("err_code", str(xid)), ("err_msg", xid_message(xid)))


@dataclass(frozen=True, slots=True)
class _Seen:
    xid: int
    order: int


class XidTracker:
    """Latest XID per (GPU index, GPU instance id or None for the whole GPU); thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, int | None], _Seen] = {}
        self._order = 0
        self._lock = threading.Lock()

    def record(self, event: DeviceEvent) -> bool:
        """Remember an XID event; False for events that are not XIDs or name no known GPU."""
        if event.kind is not EventKind.XID or event.index is None:
            return False
        with self._lock:
            self._order += 1
            self._seen[(event.index, event.gpu_instance_id)] = _Seen(event.data, self._order)
        return True

    def last(self, gpu: int, gpu_instance_id: int | None = None) -> int:
        """The latest XID for the GPU (or GPU instance, counting whole-GPU events too); 0 if none."""
        with self._lock:
            candidates = [self._seen.get((gpu, None)), self._seen.get((gpu, gpu_instance_id))]
        latest = max((c for c in candidates if c is not None), key=lambda c: c.order, default=None)
        return 0 if latest is None else latest.xid


class XidWatch:
    """Feeds `tracker` from `nvml.wait_event` on a daemon thread until `stop()`."""

    def __init__(self, nvml: Nvml, tracker: XidTracker, *, wait_ms: int = WAIT_MS) -> None:
        self._nvml = nvml
        self._tracker = tracker
        self._wait_ms = wait_ms
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xid-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                event = self._nvml.wait_event(self._wait_ms)
            except NvmlError as error:
                _log.warning("waiting for XID events failed: %s; retrying in %.0f s", error, RETRY_SECONDS)
                self._stopping.wait(RETRY_SECONDS)
                continue
            if event is not None and self._tracker.record(event):
                _log.warning("XID %d (%s) on GPU %s", event.data, xid_message(event.data), event.index)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
