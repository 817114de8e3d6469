"""Kubernetes API failures as exceptions the agents catch by meaning, mapped once from lightkube's and httpx2's.

lightkube raises `lightkube.ApiError` (carrying the decoded `Status`) for error answers, a bare
`httpx2.HTTPStatusError` for answers it leaves undecoded (a watch's, or a body that is not JSON), an
`httpx2.TransportError` when no answer came, and `lightkube.ConfigError` for unusable configuration.
:func:`kube_error` maps each, by the status code (and the `Status` reason where one code has two meanings: 409
`AlreadyExists` or `Conflict`). Which failures are worth another attempt is the transport's to say
(:mod:`.transport`); :class:`NotLeader` is what its write guard raises in a replica that lost its Lease.
"""

from __future__ import annotations

import contextlib
import json
from http import HTTPStatus

import httpx2
from lightkube import ApiError as LightkubeApiError
from lightkube import ConfigError

__all__ = ["AlreadyExists", "ApiError", "ApiUnreachable", "Conflict", "Forbidden", "Gone", "KubeConfigError",
           "KubeError", "NotFound", "NotLeader", "ServerError", "TooManyRequests", "Unauthorized", "kube_error"]


class KubeError(Exception): """Anything that kept a Kubernetes API call from succeeding."""
class KubeConfigError(KubeError): """No usable API server configuration: no service account or kubeconfig, or bad."""
class ApiUnreachable(KubeError): """The request got no HTTP answer: connection refused or reset, timeout, TLS."""
class NotLeader(KubeError): """A write refused before it was sent: this replica does not hold its Lease with time to spare."""


class ApiError(KubeError):
    """The API server answered with an error status; `reason` is the Status reason (`NotFound`, ...)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{message} ({status} {reason})" if message else f"{status} {reason}")
        self.status, self.reason, self.message = status, reason, message


class Unauthorized(ApiError): """The credentials were missing, expired or rejected (401)."""
class Forbidden(ApiError): """RBAC does not allow this request (403)."""
class NotFound(ApiError): """The object, or the resource type itself, does not exist (404)."""
class Conflict(ApiError): """The object changed since it was read (409 Conflict): read it again and retry."""
class AlreadyExists(Conflict): """An object with this name already exists (409 AlreadyExists)."""
class Gone(ApiError): """The resource version asked for is too old (410 Expired): read again before watching."""
class TooManyRequests(ApiError): """The server is throttling this client (429)."""
class ServerError(ApiError): """The server failed (5xx)."""


_BY_REASON: dict[str, type[ApiError]] = {"AlreadyExists": AlreadyExists}  # 409 is a Conflict otherwise
_BY_STATUS: dict[int, type[ApiError]] = {401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone,
                                         429: TooManyRequests}


_PHRASES = {status.value: status.phrase.replace(" ", "") for status in HTTPStatus}  # a reason for a bare code


def _api_error(code: int, reason: str | None, message: str | None) -> ApiError:
    reason = reason or _PHRASES.get(code, "Unknown")
    kind = _BY_REASON.get(reason) or _BY_STATUS.get(code) or (ServerError if code >= 500 else ApiError)
    return kind(code, reason, message or "")


def _undecoded(response: httpx2.Response) -> ApiError:
    """An answer lightkube left undecoded: its `Status` if the body is one, else the body's text."""
    text = ""
    with contextlib.suppress(httpx2.HTTPError, RuntimeError):  # a closed stream has nothing more to read
        text = response.read().decode(errors="replace")
    with contextlib.suppress(ValueError):
        found = json.loads(text)
        if isinstance(found, dict) and found.get("kind") == "Status":
            code = int(found.get("code") or response.status_code)
            return _api_error(code, found.get("reason"), found.get("message"))
    return _api_error(response.status_code, None, text.strip()[:500])


def kube_error(error: Exception) -> KubeError:
    """Our exception for a failure lightkube or httpx2 raised."""
    if isinstance(error, LightkubeApiError):
        return _api_error(error.status.code or 500, error.status.reason, error.status.message)
    if isinstance(error, httpx2.HTTPStatusError):
        return _undecoded(error.response)
    if isinstance(error, httpx2.TransportError):
        host = "the API server"
        with contextlib.suppress(RuntimeError):  # an error raised outside a request has none
            host = str(error.request.url.host)
        return ApiUnreachable(f"no answer from {host}: {type(error).__name__}: {error}")
    if isinstance(error, ConfigError):
        return KubeConfigError(str(error))
    return KubeError(f"{type(error).__name__}: {error}")
