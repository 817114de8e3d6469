"""Reading and writing the remediation's Node annotations, tolerant of garbage.

Anyone can edit a Node, so every reader here answers a :class:`Read`: the value, or None with a `problem` saying
what was wrong. A malformed annotation is treated as absent and reported, never a crash; the planner decides what
absent means at each step (:mod:`gpu_operator.remediation.steps`). Writers produce compact JSON with a fixed key
order, so the same record always makes the same text (a re-planned patch is byte-for-byte the same).

`fault`: `{"class", "condition", "reason", "gpus": [{"uuid", "pci"}], "since"}`; `since` is the condition's
`lastTransitionTime` (epoch seconds).

`stage`: `{"action", "started", "attempt", "request", "bootID"}` as the design page fixes them, and, only where
they apply, `acted` (when the request went out: the clock of its timeout), `validating` (when the validation
began) and `reason` (why the node needs a person, or which failure brought it to this rung: after a failure the
ladder goes on even if no fault condition holds any more, since the node did not validate). `request` and
`bootID` are written when a reset, reboot or reimage is asked for, `bootID` being the node's boot ID at that
moment: a different one later proves the reboot happened.

`history`: `[{"action", "at", "result"}]`, newest last. A repair is recorded when it is asked for (`pending`) and
its result replaces `pending` when it ends (`success`, `failed: <why>`, `timed-out`); a recovery is recorded as
`{"action": "validate", "result": "passed"}`. Entries older than the rate window are dropped when the history is
written, except the newest recovery: a fault whose condition is older than it is stale and never acted on.

The node agent's side: :func:`pending_reset` and :func:`pending_reboot` say whether a request is still to be
carried out, so an agent restarted after acting (or after the reboot it was asked for) never acts twice.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gpu_operator.faults import ACTIONS, FAULT_CLASSES
from gpu_operator.remediation.vocabulary import (
    REBOOT_REQUEST_ANNOTATION,
    RESET_REQUEST_ANNOTATION,
    RESET_RESULT_ANNOTATION,
    STAGE_ANNOTATION,
)

__all__ = [
    "HISTORY_LIMIT",
    "PENDING",
    "RECOVERED",
    "FaultRecord",
    "GpuRef",
    "HistoryEntry",
    "Read",
    "ResetRequest",
    "ResetResult",
    "StageRecord",
    "format_fault",
    "format_history",
    "format_reset_request",
    "format_reset_result",
    "format_stage",
    "gpus_in_message",
    "parse_fault",
    "parse_history",
    "parse_reset_request",
    "parse_reset_result",
    "parse_stage",
    "pending_reboot",
    "pending_reset",
    "prune_history",
]

T = TypeVar("T")

#: The result of a repair asked for and not yet over.
PENDING = "pending"
#: The history entry of a recovery: `{"action": "validate", "result": "passed"}`.
RECOVERED = ("validate", "passed")
#: At most this many history entries are kept (an annotation is not a log).
HISTORY_LIMIT = 32
#: `GPU-<uuid> (<pci bus id>)` in a condition message, as the health monitor names a GPU.
_GPU = re.compile(r"\b((?:GPU|MIG)-[0-9A-Za-z-]+)\s*\(([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\)")
_REQUEST_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,62}")
_UUID = re.compile(r"(?:GPU|MIG)-[0-9A-Za-z-]+")


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a reader made of one annotation: its value, or None and what was wrong (None: absent, or fine)."""

    value: T | None
    problem: str | None = None


@dataclass(frozen=True, order=True)
class GpuRef:
    uuid: str
    pci: str = ""


@dataclass(frozen=True)
class FaultRecord:
    fault_class: str
    condition: str
    reason: str
    gpus: tuple[GpuRef, ...]
    since: float


@dataclass(frozen=True)
class StageRecord:
    action: str
    started: float
    attempt: int = 0
    request: str | None = None
    boot_id: str | None = None
    acted: float | None = None
    validating: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class HistoryEntry:
    action: str
    at: float
    result: str

    @property
    def recovery(self) -> bool:
        return (self.action, self.result) == RECOVERED


@dataclass(frozen=True)
class ResetRequest:
    request: str
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class ResetResult:
    request: str
    succeeded: bool
    reason: str = ""


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _load(text: str | None, key: str) -> tuple[Any, str | None]:
    if text is None:
        return None, None
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return None, f"{key} is not JSON ({_shorten(text)}): treated as absent"


def _shorten(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _epoch(value: Any) -> float | None:
    """A time in epoch seconds: a finite, non-negative number (never a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def gpus_in_message(message: str) -> tuple[GpuRef, ...]:
    """The GPUs a condition message names (`GPU-... (0000:17:00.0): ...`), each once, in the order named."""
    seen: dict[str, GpuRef] = {}
    for uuid, pci in _GPU.findall(message or ""):
        seen.setdefault(uuid, GpuRef(uuid, pci.lower()))
    return tuple(seen.values())


def format_fault(record: FaultRecord) -> str:
    return _dump({"class": record.fault_class, "condition": record.condition, "reason": record.reason,
                  "gpus": [{"uuid": g.uuid, "pci": g.pci} for g in record.gpus], "since": record.since})


def _gpu_refs(value: Any) -> tuple[GpuRef, ...] | None:
    if not isinstance(value, list):
        return None
    refs = []
    for item in value:
        uuid = item.get("uuid") if isinstance(item, dict) else None
        pci = item.get("pci", "") if isinstance(item, dict) else None
        if not isinstance(uuid, str) or not _UUID.fullmatch(uuid) or not isinstance(pci, str):
            return None
        refs.append(GpuRef(uuid, pci))
    return tuple(refs)


def parse_fault(text: str | None) -> Read[FaultRecord]:
    key = "the fault annotation"
    data, problem = _load(text, key)
    if not isinstance(data, dict):
        return Read(None, problem or (None if text is None else f"{key} is not a JSON object: treated as absent"))
    fault_class, condition = data.get("class"), _text(data.get("condition"))
    reason, since, gpus = data.get("reason", ""), _epoch(data.get("since")), _gpu_refs(data.get("gpus", []))
    if fault_class not in FAULT_CLASSES:
        return Read(None, f"{key} names no fault class ({_shorten(str(fault_class))}): treated as absent")
    if condition is None or not isinstance(reason, str) or since is None or gpus is None:
        return Read(None, f"{key} lacks a condition, reason, since or gpus list it can use: treated as absent")
    return Read(FaultRecord(fault_class, condition, reason, gpus, since))


def format_stage(stage: StageRecord) -> str:
    data: dict[str, Any] = {"action": stage.action, "started": stage.started, "attempt": stage.attempt}
    optional = (("request", stage.request), ("bootID", stage.boot_id), ("acted", stage.acted),
                ("validating", stage.validating), ("reason", stage.reason))
    data.update((name, value) for name, value in optional if value is not None)
    return _dump(data)


def parse_stage(text: str | None) -> Read[StageRecord]:
    key = "the stage annotation"
    data, problem = _load(text, key)
    if not isinstance(data, dict):
        return Read(None, problem or (None if text is None else f"{key} is not a JSON object: treated as absent"))
    action, started, attempt = data.get("action"), _epoch(data.get("started")), data.get("attempt", 0)
    if action not in ACTIONS or started is None:
        return Read(None, f"{key} lacks a known action or its start time: treated as absent")
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
        return Read(None, f"{key} has attempt {_shorten(str(attempt))}, not a count: treated as absent")
    request, boot_id, reason = data.get("request"), data.get("bootID"), data.get("reason")
    acted, validating = data.get("acted"), data.get("validating")
    if request is not None and not (isinstance(request, str) and _REQUEST_ID.fullmatch(request)):
        return Read(None, f"{key} has a request id that is not one: treated as absent")
    times = [(name, value) for name, value in (("acted", acted), ("validating", validating)) if value is not None]
    if any(_epoch(value) is None for _, value in times) or not all(
            value is None or isinstance(value, str) for value in (boot_id, reason)):
        return Read(None, f"{key} has a field of the wrong type: treated as absent")
    return Read(StageRecord(action, started, attempt, request, boot_id or None, _epoch(acted), _epoch(validating),
                            reason))


def format_history(entries: Iterable[HistoryEntry]) -> str:
    return _dump([{"action": e.action, "at": e.at, "result": e.result} for e in entries])


def parse_history(text: str | None) -> Read[tuple[HistoryEntry, ...]]:
    """The history, oldest first; entries that are not `{action, at, result}` are dropped and reported."""
    key = "the history annotation"
    data, problem = _load(text, key)
    if text is None:
        return Read(())
    if not isinstance(data, list):
        return Read((), problem or f"{key} is not a JSON list: treated as empty")
    entries = []
    for item in data:
        action = item.get("action") if isinstance(item, dict) else None
        at = _epoch(item.get("at")) if isinstance(item, dict) else None
        result = item.get("result") if isinstance(item, dict) else None
        if isinstance(action, str) and at is not None and isinstance(result, str):
            entries.append(HistoryEntry(action, at, result))
    dropped = len(data) - len(entries)
    note = f"{key} has {dropped} entr{'y' if dropped == 1 else 'ies'} it cannot use: left out" if dropped else None
    return Read(tuple(sorted(entries, key=lambda e: e.at)), note)


def prune_history(entries: Sequence[HistoryEntry], now: float, window: float) -> tuple[HistoryEntry, ...]:
    """The entries inside the rate window (and still pending), and the newest recovery whatever its age."""
    recoveries = [e for e in entries if e.recovery]
    newest_recovery = recoveries[-1] if recoveries else None
    kept = [e for e in entries if e.at >= now - window or e.result == PENDING or e is newest_recovery]
    return tuple(kept[-HISTORY_LIMIT:])


def format_reset_request(request: ResetRequest) -> str:
    return f"{request.request}:{','.join(request.gpus)}"


def parse_reset_request(text: str | None) -> Read[ResetRequest]:
    if text is None:
        return Read(None)
    request, _, gpus = text.partition(":")
    uuids = tuple(g.strip() for g in gpus.split(",") if g.strip())
    if not _REQUEST_ID.fullmatch(request) or not uuids or not all(_UUID.fullmatch(u) for u in uuids):
        return Read(None, f"the reset request {_shorten(text)} is not <request-id>:<uuid>[,<uuid>...]")
    return Read(ResetRequest(request, uuids))


def format_reset_result(result: ResetResult) -> str:
    return f"{result.request}:success" if result.succeeded else f"{result.request}:failed:{result.reason}"


def parse_reset_result(text: str | None) -> Read[ResetResult]:
    if text is None:
        return Read(None)
    request, _, rest = text.partition(":")
    verdict, _, reason = rest.partition(":")
    if _REQUEST_ID.fullmatch(request) and verdict == "success" and not reason:
        return Read(ResetResult(request, True))
    if _REQUEST_ID.fullmatch(request) and verdict == "failed":
        return Read(ResetResult(request, False, reason.strip() or "no reason given"))
    return Read(None, f"the reset result {_shorten(text)} is not <request-id>:success or <request-id>:failed:<why>")


def pending_reset(annotations: Mapping[str, str]) -> ResetRequest | None:
    """For the node agent: the reset to carry out now (a request without a result for its id yet), or None."""
    request = parse_reset_request(annotations.get(RESET_REQUEST_ANNOTATION)).value
    result = parse_reset_result(annotations.get(RESET_RESULT_ANNOTATION)).value
    if request is None or (result is not None and result.request == request.request):
        return None
    return request


def pending_reboot(annotations: Mapping[str, str], boot_id: str) -> str | None:
    """For the node agent: the id of the reboot to carry out now, or None.

    A reboot is asked for with the node's boot ID of that moment (the stage's `bootID`); once the node booted
    again its boot ID differs, so an agent that starts after the reboot (the request still there until the
    controller sees the new boot) does not reboot a second time. A request without a readable stage is not acted
    on."""
    request = annotations.get(REBOOT_REQUEST_ANNOTATION)
    stage = parse_stage(annotations.get(STAGE_ANNOTATION)).value
    if not request or not _REQUEST_ID.fullmatch(request) or stage is None:
        return None
    if stage.request != request or not stage.boot_id or stage.boot_id != boot_id:
        return None
    return request
