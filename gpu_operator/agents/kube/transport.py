"""One retry policy for every Kubernetes API call the agents make, applied where lightkube sends: its transport.

lightkube hands each request to an httpx transport; :class:`RetryingTransport` wraps the real one, so a list, a
patch, an eviction or the first request of a watch are all retried by the same rules, whatever code made them:

| what came back | retried |
|---|---|
| no connection (refused, connect timeout): nothing reached the server | always |
| the connection broke after sending | idempotent verbs only (a POST may have created its object) |
| 429 Too Many Requests (priority and fairness, max-in-flight) | always, after `Retry-After` |
| 429 from the Eviction API (a JSON `Status`: a PodDisruptionBudget said no) | never: it is an answer |
| 5xx | idempotent verbs, or any verb the server asked to come back (`Retry-After`) |
| anything else | never |

Waits are jittered exponential backoff, at least the server's `Retry-After`, and no retry starts after the
policy's deadline, so a call ends in bounded time with the last answer, which lightkube turns into its error as
usual. Two hooks make it the controller's too: a *guard* runs before each attempt of a write and may refuse it
(the leader's fencing: a replica that no longer holds its Lease writes nothing), and an *interrupt* event cuts a
wait short (SIGTERM: the process stops instead of waiting out a backoff). client-go does the same in its REST
client (`Retry-After` on 429 and 5xx) and leader election (writes only within the renew deadline).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2

__all__ = ["IDEMPOTENT_METHODS", "READ_METHODS", "RetryPolicy", "RetryingTransport", "WriteGuard",
           "response_retryable", "retry_after_seconds", "transport_error_retryable"]

_log = logging.getLogger(__name__)

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
IDEMPOTENT_METHODS = READ_METHODS | {"PUT", "DELETE"}
#: Called before each attempt of a write; raises to refuse it (see :mod:`gpu_operator.agents.kube.errors`).
WriteGuard = Callable[[httpx2.Request], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """At most `attempts` tries (the first included) and no retry after `deadline` seconds from the first;
    waiting `initial_delay` doubled each time up to `max_delay`, +/- `jitter`, and at least the server's
    `Retry-After` up to `max_retry_after`."""

    attempts: int = 10
    deadline: float = 30.0
    initial_delay: float = 0.25
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    jitter: float = 0.2
    random: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        backoff = min(self.max_delay, self.initial_delay * 2 ** (retry - 1))
        backoff *= 1.0 + self.jitter * (2.0 * self.random() - 1.0)
        return max(backoff, min(retry_after or 0.0, self.max_retry_after))


def retry_after_seconds(headers: httpx2.Headers) -> float | None:
    """The seconds the server asked to wait (`Retry-After` in seconds), if it did."""
    try:
        return max(0.0, float(headers["retry-after"]))
    except (KeyError, ValueError):
        return None


def _is_eviction(request: httpx2.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith("/eviction")


def response_retryable(request: httpx2.Request, response: httpx2.Response) -> bool:
    """Whether an answer asks for another attempt (the table in the module docstring)."""
    status = response.status_code
    if status == 429:
        refused_by_budget = _is_eviction(request) and "json" in response.headers.get("content-type", "")
        return not refused_by_budget
    if status >= 500:
        return request.method in IDEMPOTENT_METHODS or retry_after_seconds(response.headers) is not None
    return False


def transport_error_retryable(method: str, error: httpx2.TransportError) -> bool:
    """A connection never made is always worth another try; one lost after sending only for idempotent verbs."""
    return isinstance(error, httpx2.ConnectError | httpx2.ConnectTimeout) or method in IDEMPOTENT_METHODS


def _abandoned(response: httpx2.Response, request: httpx2.Request) -> httpx2.Response:
    """The last answer, whose body was let go when a wait began, as the caller will see it: status only."""
    return httpx2.Response(response.status_code, content=response.reason_phrase.encode(), request=request,
                           headers={"content-type": "text/plain"})


class RetryingTransport(httpx2.BaseTransport):
    """An httpx transport that retries by :class:`RetryPolicy`, guards writes and sets the User-Agent."""

    def __init__(self, inner: httpx2.BaseTransport, policy: RetryPolicy = RetryPolicy(), *,
                 guard: WriteGuard | None = None, interrupt: threading.Event | None = None,
                 user_agent: str | None = None, sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._inner, self.policy, self._guard, self._user_agent = inner, policy, guard, user_agent
        self._interrupt, self._sleep, self._clock = interrupt, sleep, clock

    def _wait(self, seconds: float) -> bool:
        """Wait before the next attempt; False when interrupted (the caller gives up at once)."""
        if self._interrupt is not None:
            return not self._interrupt.wait(seconds)
        (self._sleep or time.sleep)(seconds)
        return True

    def _again(self, attempt: int, started: float, wait: float) -> bool:
        interrupted = self._interrupt is not None and self._interrupt.is_set()
        return (not interrupted and attempt < self.policy.attempts
                and self._clock() - started + wait <= self.policy.deadline)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._user_agent:
            request.headers["User-Agent"] = self._user_agent
        started, attempt = self._clock(), 1
        while True:
            if self._guard is not None and request.method not in READ_METHODS:
                self._guard(request)
            try:
                response = self._inner.handle_request(request)
            except httpx2.TransportError as error:
                wait = self.policy.delay(attempt)
                if not (transport_error_retryable(request.method, error) and self._again(attempt, started, wait)):
                    raise
                why = f"{type(error).__name__}: {error}"
                if not self._retry_after(request, why, wait, attempt):
                    raise
            else:
                if not response_retryable(request, response):
                    return response
                wait = self.policy.delay(attempt, retry_after_seconds(response.headers))
                if not self._again(attempt, started, wait):
                    return response
                response.close()
                if not self._retry_after(request, f"{response.status_code} {response.reason_phrase}", wait, attempt):
                    return _abandoned(response, request)
            attempt += 1

    def _retry_after(self, request: httpx2.Request, why: str, wait: float, attempt: int) -> bool:
        _log.info("%s %s: %s; retrying in %.2f s (attempt %d of at most %d)", request.method, request.url.path, why,
                  wait, attempt + 1, self.policy.attempts)
        return self._wait(wait)

    def close(self) -> None:
        self._inner.close()
