"""lightkube's and httpx2's failures map onto our exceptions (Status reason first, then status code), and which
of them are retried."""

from __future__ import annotations

import json

import httpx2
import pytest
from lightkube import ApiError as LightkubeApiError
from lightkube import ConfigError
from lightkube.models.meta_v1 import Status

from gpu_operator.agents.kube import (
    AlreadyExists,
    ApiError,
    ApiUnreachable,
    Conflict,
    Forbidden,
    Gone,
    KubeConfigError,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
)
from gpu_operator.agents.kube.errors import kube_error

REQUEST = httpx2.Request("GET", "https://10.0.0.1/api/v1/nodes/n1")


def status(code: int, reason: str, message: str = "m") -> dict:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}


def answer(code: int, body: bytes | dict, headers: dict[str, str] | None = None) -> httpx2.Response:
    content = json.dumps(body).encode() if isinstance(body, dict) else body
    kind = "application/json" if isinstance(body, dict) else "text/plain"
    return httpx2.Response(code, content=content, headers={"Content-Type": kind, **(headers or {})}, request=REQUEST)


def lightkube_error(code: int, reason: str, message: str = "m", **headers: str) -> LightkubeApiError:
    return LightkubeApiError(request=REQUEST, response=answer(code, status(code, reason, message), headers))


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (422, "Invalid", ApiError),
        (403, "Forbidden", Forbidden),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ServerError),
        (504, "Timeout", ServerError),
        (418, "Teapot", ApiError),
    ],
)
def test_the_status_reason_decides_then_the_code(code: int, reason: str, expected: type[ApiError]) -> None:
    error = kube_error(lightkube_error(code, reason, 'pods "x" not found'))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, 'pods "x" not found')
    assert str(error) == f'pods "x" not found ({code} {reason})'


def test_already_exists_is_a_conflict_but_not_the_other_way() -> None:
    assert isinstance(kube_error(lightkube_error(409, "AlreadyExists")), Conflict)
    assert not isinstance(kube_error(lightkube_error(409, "Conflict")), AlreadyExists)


def test_a_watch_error_event_without_a_response() -> None:
    event = LightkubeApiError(status=Status(code=410, reason="Expired", message="too old resource version: 1 (5)"))
    error = kube_error(event)
    assert type(error) is Gone and error.message == "too old resource version: 1 (5)"


def test_answers_lightkube_left_undecoded() -> None:
    def undecoded(response: httpx2.Response) -> KubeError:
        return kube_error(httpx2.HTTPStatusError("x", request=REQUEST, response=response))

    plain = undecoded(answer(404, b"404 page not found\n"))
    assert type(plain) is NotFound and (plain.reason, plain.message) == ("NotFound", "404 page not found")
    watched = undecoded(answer(410, status(410, "Expired", "too old")))  # a watch's error answer
    assert type(watched) is Gone and watched.message == "too old"
    assert type(undecoded(answer(502, b""))) is ServerError
    assert undecoded(answer(502, b"")).reason == "BadGateway"
    assert type(undecoded(answer(599, b""))) is ServerError and undecoded(answer(599, b"")).reason == "Unknown"


def test_no_answer_and_bad_configuration() -> None:
    unreachable = kube_error(httpx2.ConnectError("[Errno 111] Connection refused", request=REQUEST))
    assert type(unreachable) is ApiUnreachable
    assert str(unreachable) == "no answer from 10.0.0.1: ConnectError: [Errno 111] Connection refused"
    assert str(kube_error(httpx2.ReadError("reset"))) == "no answer from the API server: ReadError: reset"
    assert type(kube_error(ConfigError("Token file /t not found"))) is KubeConfigError
