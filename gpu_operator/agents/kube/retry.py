"""When a failed API request is tried again, and how long to wait first.

A request is retried when the failure says nothing was changed or trying again is harmless:

* 429 Too Many Requests - the server refused the request before doing anything;
* 5xx - for idempotent verbs (GET, HEAD, PUT, DELETE), or when the server asked to come back (`Retry-After`);
* no answer - a refused connection (nothing was sent) for every verb, other network failures for idempotent
  verbs only (a POST that timed out may have created its object; retrying could create a second one).

Waits grow exponentially from `initial_delay` up to `max_delay`, with some jitter so that a fleet of agents does
not return in lockstep; a `Retry-After` the server sends is honoured up to `max_retry_after`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_RETRY",
    "IDEMPOTENT_METHODS",
    "RETRYABLE_STATUS",
    "RetryPolicy",
    "retries_network",
    "retries_status",
]

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times a request is tried (`attempts`, the first included) and the waits in between."""

    attempts: int = 5
    initial_delay: float = 0.25
    multiplier: float = 2.0
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    jitter: float = 0.2
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        backoff = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        backoff *= 1.0 + self.jitter * (2.0 * self.random() - 1.0)
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_retry_after))
        return max(0.0, backoff)


#: The policy clients use unless given another.
DEFAULT_RETRY = RetryPolicy()


def retries_status(method: str, status: int, retry_after: float | None) -> bool:
    """Whether an answer with this status is worth another attempt."""
    if status == 429:
        return True
    if status not in RETRYABLE_STATUS:
        return False
    return method in IDEMPOTENT_METHODS or retry_after is not None


def retries_network(method: str, error: OSError) -> bool:
    """Whether a request that got no answer is worth another attempt."""
    return isinstance(error, ConnectionRefusedError) or method in IDEMPOTENT_METHODS
