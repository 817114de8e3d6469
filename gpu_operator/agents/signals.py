"""Signals as events an agent's main loop waits for.

NVIDIA's node programs share one convention: SIGHUP means "reload the config and start over" (the config-manager
sidecar sends it after switching the device plugin config), SIGINT, SIGTERM and SIGQUIT mean "clean up and
exit". `SignalQueue` turns the signals into items of a queue, so the main loop can wait for "a signal or the
next relabel, whichever comes first" without polling. Handlers are installed on entering the context and
restored on leaving it; they must be installed from the main thread.
"""

from __future__ import annotations

import queue
import signal
from types import FrameType, TracebackType
from typing import Protocol, Self

__all__ = ["SignalSource", "SignalQueue", "RELOAD", "STOP", "WATCHED"]

RELOAD = signal.SIGHUP
STOP: frozenset[int] = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGQUIT})
WATCHED: tuple[int, ...] = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)


class SignalSource(Protocol):
    """Something to wait on: returns the signal received, or None when `timeout` (seconds) passed first."""

    def wait(self, timeout: float | None) -> int | None: ...


class SignalQueue:
    """The process's signals as a queue (a context manager that installs and restores the handlers)."""

    def __init__(self, signals: tuple[int, ...] = WATCHED) -> None:
        self._signals = signals
        self._queue: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._previous: dict[int, object] = {}

    def _handle(self, number: int, frame: FrameType | None) -> None:
        self._queue.put(number)

    def __enter__(self) -> Self:
        for number in self._signals:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
