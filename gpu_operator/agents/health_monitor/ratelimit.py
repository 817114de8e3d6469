"""A token bucket: how the monitor keeps its writes to the API server few, whatever the GPUs do.

`burst` writes may go at once; after that one token comes back every `1 / rate` seconds. The same shape as
client-go's flowcontrol token bucket, which rate-limits every Kubernetes client (and NVIDIA's programs with it),
and as the event spam filter of client-go's EventCorrelator (a bucket per object).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """`take()` a token if one is there; `wait_time()` says how long until the next one."""

    def __init__(self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs a positive rate and a burst of at least 1 (rate {rate}, "
                             f"burst {burst})")
        self._rate, self._burst, self._clock = rate, burst, clock
        self._tokens = float(burst)
        self._stamp = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def take(self) -> bool:
        with self._lock:
            self._refill()
            if self._tokens >= 1:
                self._tokens -= 1
                return True
            return False

    def wait_time(self) -> float:
        with self._lock:
            self._refill()
            return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self._rate
