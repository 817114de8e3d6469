"""API answers map onto our exceptions by Status reason first, then by HTTP status."""

from __future__ import annotations

import json

import pytest

from gpu_operator.agents.kube import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    ServerTimeout,
    TooManyRequests,
)
from gpu_operator.agents.kube.errors import api_error


def status(code: int, reason: str, message: str = "m") -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": message}
    ).encode()


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (403, "Forbidden", Forbidden),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ServerError),
        (504, "Timeout", ServerTimeout),
    ],
)
def test_reason_decides(code: int, reason: str, expected: type[ApiError]) -> None:
    error = api_error(code, status(code, reason, 'pods "x" not found'))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, 'pods "x" not found')
    assert str(error) == f'pods "x" not found ({code} {reason})'


def test_already_exists_is_a_conflict_but_not_the_other_way() -> None:
    assert isinstance(api_error(409, status(409, "AlreadyExists")), Conflict)
    assert not isinstance(api_error(409, status(409, "Conflict")), AlreadyExists)


def test_bare_status_codes_get_the_api_servers_reason() -> None:
    error = api_error(404, b"404 page not found\n")
    assert type(error) is NotFound and error.reason == "NotFound" and error.message == "404 page not found"
    assert type(api_error(502, b"")) is ServerError
    assert api_error(502, b"").reason == "Unknown"
    assert type(api_error(418, b"")) is ApiError


def test_status_details_are_kept() -> None:
    body = {"kind": "Status", "code": 409, "reason": "AlreadyExists", "details": {"name": "n", "kind": "pods"}}
    assert api_error(409, body).details == {"name": "n", "kind": "pods"}
