"""A test's background loop (a sampler, a simulated node side): a daemon thread with a stop event, used as a
context manager so it is stopped, and joined within seconds, however the test ends."""

from __future__ import annotations

import threading
from typing import Self

__all__ = ["BackgroundLoop"]


class BackgroundLoop(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join(timeout=5)
