"""Kubernetes API failures as exceptions of our own.

The API server answers a failed request with an HTTP status and, usually, a `Status` object whose `reason`
says what went wrong in the API's own words (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Expired`,
...). Every failure is mapped once, here, onto a small hierarchy the agents can catch by meaning: the reason
decides first (409 is `AlreadyExists` or `Conflict` depending on it), the status code second. Failures that never
reached an answer (refused connection, reset, timeout, TLS) are `ApiUnreachable`; a missing or unusable client
configuration is `KubeConfigError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ApiUnreachable",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeConfigError",
    "KubeError",
    "MethodNotAllowed",
    "NotFound",
    "ServerError",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "api_error",
    "status_body",
]


class KubeError(Exception):
    """Anything that kept a Kubernetes API call from succeeding."""


class KubeConfigError(KubeError):
    """No usable API server configuration (no service account, no kubeconfig, or an unsupported one)."""


class ApiUnreachable(KubeError):
    """The request got no HTTP answer: connection refused or reset, timeout, TLS failure."""


class ApiError(KubeError):
    """The API server answered with an error status; `reason` is the Status reason (`NotFound`, ...)."""

    def __init__(self, status: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{message} ({status} {reason})" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}


class BadRequest(ApiError):
    """The request itself is malformed (400)."""


class Unauthorized(ApiError):
    """The credentials were missing, expired or rejected (401)."""


class Forbidden(ApiError):
    """RBAC does not allow this request (403)."""


class NotFound(ApiError):
    """The object, or the resource type itself, does not exist (404)."""


class MethodNotAllowed(ApiError):
    """The resource does not support this verb (405)."""


class Conflict(ApiError):
    """The object changed since it was read (409 Conflict): re-read and try again."""


class AlreadyExists(Conflict):
    """An object with this name already exists (409 AlreadyExists)."""


class Gone(ApiError):
    """The resource version asked for is too old (410 Expired/Gone): re-list before watching again."""


class Invalid(ApiError):
    """The object does not pass validation (422)."""


class TooManyRequests(ApiError):
    """The server is throttling this client (429); retried with backoff before it surfaces."""


class ServerError(ApiError):
    """The server failed (5xx); retried with backoff before it surfaces."""


class ServerTimeout(ServerError):
    """The server gave up on the request (504, or reason Timeout / ServerTimeout)."""


#: Status reason -> exception; consulted before the status code.
_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
    "Timeout": ServerTimeout,
    "ServerTimeout": ServerTimeout,
}

#: HTTP status -> exception, for answers without a known reason.
_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}

#: The reason the API server would give for a bare status code.
_DEFAULT_REASON: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `Status` object in an error answer, or {} when the body is something else."""
    if isinstance(body, Mapping):
        return body
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) and parsed.get("kind") == "Status" else {}


def _exception_class(status: int, reason: str) -> type[ApiError]:
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else ApiError


def api_error(status: int, body: bytes | str | Mapping[str, Any] | None) -> ApiError:
    """The exception for an error answer: class by Status reason, then by HTTP status."""
    found = status_body(body)
    code = int(found.get("code") or status)
    reason = str(found.get("reason") or _DEFAULT_REASON.get(code, "Unknown"))
    message = str(found.get("message") or "")
    if not message and isinstance(body, bytes | str) and not found:
        message = (body.decode(errors="replace") if isinstance(body, bytes) else body).strip()[:500]
    return _exception_class(code, reason)(code, reason, message, found.get("details"))
