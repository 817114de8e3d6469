"""The one retry policy at lightkube's transport: what is retried, how long it waits, the write guard, the
interrupt, and the same rules seen through a real lightkube client against the fake API server.

client-go is the reference for the rules: rest/request.go `checkWait` retries 429 and 5xx answers that carry
`Retry-After` on any verb, and rest/with_retry.go `IsNextRetry` retries a request whose connection failed only
when it is a GET or nothing was sent; a PodDisruptionBudget's refusal of an eviction is an answer the caller
handles (kubectl's drain.Helper `evictPods` waits and tries again itself).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator

import httpx2
import pytest
from lightkube.resources.core_v1 import Node

from gpu_operator.agents.kube import (
    NODES,
    ApiUnreachable,
    NotLeader,
    RetryingTransport,
    RetryPolicy,
    TooManyRequests,
    connect,
)
from gpu_operator.agents.kube.transport import response_retryable, transport_error_retryable
from tests.agents.kube.fake_apiserver import FakeApiServer

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
BASE = "https://10.0.0.1"
THROTTLED = "Too many requests, please try again later.\n"  # kube-apiserver's own filter answers in plain text


def answer(status: int, *, json_body: bool = True, retry_after: str | None = None) -> httpx2.Response:
    headers = {"Content-Type": "application/json" if json_body else "text/plain; charset=utf-8"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    body = json.dumps({"kind": "Status", "code": status}).encode() if json_body else THROTTLED.encode()
    return httpx2.Response(status, content=body, headers=headers)


@pytest.mark.parametrize(
    ("method", "path", "response", "retried"),
    [
        ("GET", "/api/v1/nodes", answer(429, json_body=False, retry_after="1"), True),
        ("POST", "/api/v1/namespaces/a/events", answer(429, json_body=False), True),
        ("PATCH", "/api/v1/nodes/n1", answer(429), True),
        ("POST", "/api/v1/namespaces/a/pods/p/eviction", answer(429, retry_after="10"), False),  # a budget said no
        ("POST", "/api/v1/namespaces/a/pods/p/eviction", answer(429, json_body=False), True),  # throttled
        ("GET", "/api/v1/nodes", answer(503), True),
        ("DELETE", "/api/v1/namespaces/a/pods/p", answer(500), True),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", answer(504), True),
        ("POST", "/api/v1/namespaces/a/events", answer(500), False),
        ("PATCH", "/api/v1/nodes/n1", answer(503), False),
        ("PATCH", "/api/v1/nodes/n1", answer(503, retry_after="2"), True),
        ("GET", "/api/v1/nodes/n1", answer(404), False),
        ("PUT", "/api/v1/namespaces/a/configmaps/c", answer(409), False),
        ("GET", "/api/v1/nodes/n1", answer(403), False),
        ("GET", "/api/v1/nodes/n1", answer(200), False),
    ],
)
def test_which_answers_are_retried(method: str, path: str, response: httpx2.Response, retried: bool) -> None:
    assert response_retryable(httpx2.Request(method, BASE + path), response) is retried


@pytest.mark.parametrize(
    ("method", "error", "retried"),
    [
        ("POST", httpx2.ConnectError("refused"), True),
        ("PATCH", httpx2.ConnectTimeout("timed out"), True),
        ("GET", httpx2.RemoteProtocolError("disconnected"), True),
        ("DELETE", httpx2.ReadTimeout("timed out"), True),
        ("POST", httpx2.RemoteProtocolError("disconnected"), False),
        ("PATCH", httpx2.ReadTimeout("timed out"), False),
    ],
)
def test_which_lost_connections_are_retried(method: str, error: httpx2.TransportError, retried: bool) -> None:
    assert transport_error_retryable(method, error) is retried


class Script:
    """An inner transport answering from a list (a response, or an exception to raise), recording requests."""

    def __init__(self, *answers: httpx2.Response | Exception) -> None:
        self.answers, self.requests = list(answers), []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        found = self.answers.pop(0) if self.answers else httpx2.Response(200, json={})
        if isinstance(found, Exception):
            raise found
        return found


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def transport(script: Script, policy: RetryPolicy, *, clock: Clock | None = None,
              guard: Callable[[httpx2.Request], None] | None = None, interrupt: threading.Event | None = None,
              waits: list[float] | None = None) -> RetryingTransport:
    clock = clock or Clock()

    def sleep(seconds: float) -> None:
        (waits if waits is not None else []).append(seconds)
        clock.now += seconds

    return RetryingTransport(httpx2.MockTransport(script), policy, guard=guard, interrupt=interrupt, sleep=sleep,
                             clock=clock, user_agent="gpu-operator/test (replica-a)")


def send(t: RetryingTransport, method: str = "GET", path: str = "/api/v1/nodes") -> httpx2.Response:
    with httpx2.Client(transport=t, base_url=BASE) as client:
        return client.request(method, path)


POLICY = RetryPolicy(attempts=10, deadline=30.0, initial_delay=0.5, max_delay=8.0, jitter=0.0, max_retry_after=20)


def test_retry_after_then_exponential_backoff_until_an_answer() -> None:
    script = Script(answer(429, json_body=False, retry_after="3"), answer(503), answer(503))
    waits: list[float] = []
    response = send(transport(script, POLICY, waits=waits))
    assert response.status_code == 200 and waits == [3.0, 1.0, 2.0] and len(script.requests) == 4
    assert {r.headers["user-agent"] for r in script.requests} == {"gpu-operator/test (replica-a)"}


def test_no_retry_starts_after_the_deadline_and_the_last_answer_is_returned() -> None:
    script = Script(*[answer(429, json_body=False, retry_after="8")] * 10)
    clock, waits = Clock(), []
    response = send(transport(script, RetryPolicy(deadline=20.0, jitter=0.0), clock=clock, waits=waits))
    assert response.status_code == 429 and waits == [8.0, 8.0] and clock.now == 16.0  # a third wait ends at 24 s
    assert response.text == THROTTLED


def test_attempts_cap_the_retries_and_a_refused_connection_is_raised() -> None:
    script = Script(*[httpx2.ConnectError("refused")] * 5)
    with pytest.raises(httpx2.ConnectError):
        send(transport(script, RetryPolicy(attempts=3, jitter=0.0)))
    assert len(script.requests) == 3


def test_the_guard_runs_before_every_attempt_of_a_write_and_never_for_a_read() -> None:
    checked: list[str] = []
    script = Script(answer(429, json_body=False), answer(200), answer(200))
    t = transport(script, POLICY, guard=lambda request: checked.append(request.method))
    assert send(t, "PATCH", "/api/v1/nodes/n1").status_code == 200
    assert send(t, "GET", "/api/v1/nodes").status_code == 200
    assert checked == ["PATCH", "PATCH"]


def test_a_refusing_guard_stops_the_write_before_anything_is_sent_even_between_retries() -> None:
    leading = [True]

    def guard(request: httpx2.Request) -> None:
        if not leading[0]:
            raise NotLeader("not holding the Lease")

    def lose_lease(seconds: float) -> None:
        leading[0] = False  # the Lease was lost while waiting to retry

    script = Script(answer(503, retry_after="1"))
    t = RetryingTransport(httpx2.MockTransport(script), POLICY, guard=guard, sleep=lose_lease)
    with pytest.raises(NotLeader):
        send(t, "POST", "/api/v1/namespaces/a/pods/p/eviction")
    assert len(script.requests) == 1


def test_an_interrupt_cuts_the_wait_short_with_the_last_answer() -> None:
    interrupt = threading.Event()
    script = Script(answer(503), answer(200))
    t = RetryingTransport(httpx2.MockTransport(script), RetryPolicy(initial_delay=30.0, max_delay=30.0), interrupt=interrupt)
    threading.Timer(0.05, interrupt.set).start()
    response = send(t)
    assert response.status_code == 503 and len(script.requests) == 1
    interrupt.set()
    assert send(t).status_code == 200  # once interrupted, a call is made once and never retried


# --- through lightkube, against the fake API server ----------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as running:
        running.add(NODE)
        yield running


def test_a_plain_text_429_is_retried_for_every_client_the_agents_make(server: FakeApiServer) -> None:
    """The controller's typed client and KubeClient share the policy; lightkube alone would raise a bare
    HTTPStatusError at the first plain-text 429 (its ApiError needs a JSON Status)."""
    typed = connect(server.client().config, retry=RetryPolicy(initial_delay=0.001, jitter=0.0))
    server.fail("GET", "/api/v1/nodes/n1$", 429, times=2, text=THROTTLED, retry_after="0")
    assert typed.get(Node, "n1").metadata.name == "n1"
    server.fail("PATCH", "/api/v1/nodes/n1$", 429, times=1, text=THROTTLED)
    assert server.client().patch(NODES, "n1", {"metadata": {"labels": {"a": "b"}}})["metadata"]["labels"] == {"a": "b"}
    assert len(server.requests_to("PATCH", "/api/v1/nodes/n1$")) == 2


def test_what_still_fails_is_our_exception_with_the_reason(server: FakeApiServer) -> None:
    client = server.client(retry=RetryPolicy(attempts=2, initial_delay=0.001, jitter=0.0))
    server.fail("GET", "/api/v1/nodes/n1$", 429, times=5, text=THROTTLED)
    with pytest.raises(TooManyRequests, match="Too many requests"):
        client.get(NODES, "n1")
    server.drop("POST", "/api/v1/nodes$")
    with pytest.raises(ApiUnreachable):
        client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
    assert len(server.requests_to("POST", "/api/v1/nodes$")) == 1  # sent once: it may have been created
