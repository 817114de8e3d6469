"""A clock tests advance by hand: `clock()` is the time, `clock.sleep(s)` records the sleep and moves time on."""

from __future__ import annotations

__all__ = ["FakeClock"]


class FakeClock:
    """Monotonic time that moves only when slept on, so waits and timeouts are exact and instant in tests."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
