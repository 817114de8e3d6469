"""Deterministic time-varying values for simulated GPUs.

Each reading of a gauge (temperature, power, utilisation, ...) is drawn from the model's range by hashing
(seed, GPU, field, n) where n counts the readings of that field on that GPU: the same seed and the same
sequence of calls give the same numbers, on any machine and in any process (no `hash()`, no global random
state). Counters (energy, NVLink traffic) start from a drawn value and grow by one drawn step per reading, so
they only ever increase.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

__all__ = ["TelemetryGenerator", "draw"]


def draw(seed: int, gpu: int, name: str, tick: int, low: int, high: int) -> int:
    """A number in [low, high] determined by its arguments alone."""
    if high <= low:
        return low
    digest = hashlib.blake2b(f"{seed}:{gpu}:{name}:{tick}".encode(), digest_size=8).digest()
    return low + int.from_bytes(digest, "big") % (high - low + 1)


class TelemetryGenerator:
    """Gauges and counters of all GPUs of one simulated node."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._ticks: Counter[tuple[int, str]] = Counter()
        self._totals: dict[tuple[int, str], int] = {}
        self._lock = threading.Lock()

    def _next_tick(self, gpu: int, name: str) -> int:
        key = (gpu, name)
        tick = self._ticks[key]
        self._ticks[key] = tick + 1
        return tick

    def gauge(self, gpu: int, name: str, bounds: tuple[int, int]) -> int:
        with self._lock:
            return draw(self._seed, gpu, name, self._next_tick(gpu, name), *bounds)

    def counter(self, gpu: int, name: str, start: tuple[int, int], step: tuple[int, int]) -> int:
        with self._lock:
            key = (gpu, name)
            tick = self._next_tick(gpu, name)
            if key not in self._totals:
                self._totals[key] = draw(self._seed, gpu, f"{name}/start", 0, *start)
            else:
                self._totals[key] += draw(self._seed, gpu, f"{name}/step", tick, *step)
            return self._totals[key]
