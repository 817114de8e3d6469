"""The node-local actions the remediation controller asks for, as Node annotations, and their results.

The controller asks; the node's health monitor acts once and answers (the Node is the only datastore):

| annotation | written by | value |
|---|---|---|
| `nvidia.com/gpu-remediation.reset-request` | controller | `<request-id>:<uuid>[,<uuid>...]` (GPU or MIG UUIDs) |
| `nvidia.com/gpu-remediation.reset-started` | monitor | `<request-id>`, written before the reset |
| `nvidia.com/gpu-remediation.reset-result` | monitor | `<request-id>:success` or `<request-id>:failed:<reason>` |
| `nvidia.com/gpu-remediation.reboot-request` | controller | `<request-id>` |
| `nvidia.com/gpu-remediation.reboot-result` | monitor | `<request-id>:rebooting`, or `<request-id>:failed:<reason>` |

A request is acted on only while no answer carries its id: the monitor writes `reset-started` (or `rebooting`)
before it acts, so a monitor that restarts half-way never resets or reboots twice; it answers an interrupted reset
`failed:interrupted ...` instead (the controller climbs its ladder from there). The reboot itself the controller
sees as a new `status.nodeInfo.bootID`. A MIG device's UUID stands for its GPU (a reset is of a whole GPU). A
request id is the controller's: a letter or digit, then letters, digits, `.`, `_` and `-`, up to 63 characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "REBOOTING",
    "REBOOT_REQUEST",
    "REBOOT_RESULT",
    "RESET_REQUEST",
    "RESET_RESULT",
    "RESET_STARTED",
    "RequestError",
    "ResetRequest",
    "answered",
    "failed",
    "parse_reboot_request",
    "parse_reset_request",
    "result_id",
    "succeeded",
]

_PREFIX = "nvidia.com/gpu-remediation."
RESET_REQUEST = f"{_PREFIX}reset-request"
RESET_RESULT = f"{_PREFIX}reset-result"
RESET_STARTED = f"{_PREFIX}reset-started"
REBOOT_REQUEST = f"{_PREFIX}reboot-request"
REBOOT_RESULT = f"{_PREFIX}reboot-result"
REBOOTING = "rebooting"
_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,62}")
_UUID = re.compile(r"(?:GPU|MIG)-[0-9A-Za-z-]+")
#: What may stand in a result's reason (one line, no control characters), and how long it may be.
_REASON_LIMIT = 512


class RequestError(ValueError):
    """A request annotation that does not read as one; `request_id` is set when its id could be read."""

    def __init__(self, message: str, request_id: str | None) -> None:
        super().__init__(message)
        self.request_id = request_id


@dataclass(frozen=True, slots=True)
class ResetRequest:
    request_id: str
    uuids: tuple[str, ...]


def _request_id(text: str, annotation: str) -> str:
    if not _ID.fullmatch(text):
        raise RequestError(f"{annotation}: request id {text!r} is not a letter or digit, then up to 62 letters, "
                           "digits, '.', '_' or '-'", None)
    return text


def parse_reset_request(value: str) -> ResetRequest:
    """`<request-id>:<uuid>[,<uuid>...]`; raises RequestError naming what is wrong."""
    request_id, separator, listed = value.strip().partition(":")
    request_id = _request_id(request_id, RESET_REQUEST)
    uuids = tuple(u.strip() for u in listed.split(",") if u.strip()) if separator else ()
    if not uuids:
        raise RequestError(f"{RESET_REQUEST}: no GPU named after {request_id!r}: '<request-id>:<uuid>[,...]'",
                           request_id)
    wrong = [u for u in uuids if not _UUID.fullmatch(u)]
    if wrong:
        raise RequestError(f"{RESET_REQUEST}: {', '.join(map(repr, wrong))} is not a GPU or MIG UUID", request_id)
    return ResetRequest(request_id, tuple(dict.fromkeys(uuids)))


def parse_reboot_request(value: str) -> str:
    """`<request-id>`; raises RequestError."""
    return _request_id(value.strip(), REBOOT_REQUEST)


def result_id(value: str | None) -> str | None:
    """The request id a result answers (None without a result)."""
    return None if not value else value.split(":", 1)[0]


def answered(annotations: Mapping[str, str], result: str, request_id: str) -> str | None:
    """The monitor's answer to this request so far (`in-progress`, `success`, `failed:...`), or None."""
    value = annotations.get(result, "")
    head, _, rest = value.partition(":")
    return rest if head == request_id and rest else None


def succeeded(request_id: str) -> str:
    return f"{request_id}:success"


def failed(request_id: str, reason: str) -> str:
    text = " ".join(reason.split())[:_REASON_LIMIT] or "no reason given"
    return f"{request_id}:failed:{text}"
