"""`WITH_WAIT`: try a check once, or until it passes.

NVIDIA's validator runs a check once and fails, or - with `WITH_WAIT=true`, as the driver validation always
does - repeats it every `SLEEP_INTERVAL_SECONDS` (5 s) until it passes, with no limit: the init container then
simply waits for the component. Each failed try is logged with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from gpu_operator.agents.validator.errors import ValidationFailed

__all__ = ["Retry"]

_log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Retry:
    """Whether to wait for success (`wait`), the pause between tries, and how to pause."""

    wait: bool
    interval: float
    sleep: Callable[[float], None]

    def run(self, check: Callable[[], T], what: str) -> T:
        """`check()`'s result once it passes; ValidationFailed from the only try when not waiting."""
        while True:
            try:
                return check()
            except ValidationFailed as failure:
                if not self.wait:
                    raise
                _log.warning("%s: %s; retrying in %g seconds", what, failure, self.interval)
                self.sleep(self.interval)
