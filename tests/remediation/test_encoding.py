"""The Node annotations: every record written reads back the same, and garbage reads as absent with a reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_operator.faults import ACTIONS, FAULT_CLASSES
from gpu_operator.remediation.encoding import (
    HISTORY_LIMIT,
    FaultRecord,
    GpuRef,
    HistoryEntry,
    ResetRequest,
    ResetResult,
    StageRecord,
    format_fault,
    format_history,
    format_reset_request,
    format_reset_result,
    format_stage,
    gpus_in_message,
    parse_fault,
    parse_history,
    parse_reset_request,
    parse_reset_result,
    parse_stage,
    pending_reboot,
    pending_reset,
    prune_history,
)
from gpu_operator.remediation.vocabulary import (
    REBOOT_REQUEST_ANNOTATION,
    RESET_REQUEST_ANNOTATION,
    RESET_RESULT_ANNOTATION,
    STAGE_ANNOTATION,
    blocks_upgrade,
    request_id,
)

UUID = "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
_times = st.floats(0, 4e9, allow_nan=False)
_request = st.from_regex(r"[0-9a-f]{12}", fullmatch=True)


@given(st.sampled_from(sorted(FAULT_CLASSES)), st.text(max_size=20), _times,
       st.lists(st.tuples(st.from_regex(r"GPU-[0-9a-f-]{1,36}", fullmatch=True),
                          st.from_regex(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", fullmatch=True)), max_size=4))
def test_a_fault_record_reads_back_as_written(fault_class: str, reason: str, since: float,
                                              gpus: list[tuple[str, str]]) -> None:
    record = FaultRecord(fault_class, "GPUFallenOffBus", reason, tuple(GpuRef(u, p) for u, p in gpus), since)
    assert parse_fault(format_fault(record)).value == record


@given(st.sampled_from(ACTIONS), _times, st.integers(0, 99), st.one_of(st.none(), _request),
       st.one_of(st.none(), st.text(min_size=1, max_size=10)), st.one_of(st.none(), _times),
       st.one_of(st.none(), _times), st.one_of(st.none(), st.text(max_size=30)))
def test_a_stage_reads_back_as_written(action: str, started: float, attempt: int, request: str | None,
                                       boot_id: str | None, acted: float | None, validating: float | None,
                                       reason: str | None) -> None:
    stage = StageRecord(action, started, attempt, request, boot_id, acted, validating, reason)
    assert parse_stage(format_stage(stage)).value == stage


def test_the_stage_uses_the_design_pages_keys() -> None:
    text = format_stage(StageRecord("reboot", 10.0, 2, "abc", "boot-1", 11.0))
    assert json.loads(text) == {"action": "reboot", "started": 10.0, "attempt": 2, "request": "abc",
                                "bootID": "boot-1", "acted": 11.0}


@pytest.mark.parametrize("text", [
    "", "{", "null", "[]", "3", '"x"', '{"action": "reboot"}', '{"action": "dance", "started": 1}',
    '{"action": "reboot", "started": -1}', '{"action": "reboot", "started": true}',
    '{"action": "reboot", "started": 1, "attempt": "2"}', '{"action": "reboot", "started": 1, "request": "a b"}',
    '{"action": "reboot", "started": 1, "acted": "now"}', '{"action": "reboot", "started": 1e999}',
    "[" * 5000 + "]" * 5000,
])
def test_a_malformed_stage_is_absent_with_a_reason(text: str) -> None:
    read = parse_stage(text)
    assert read.value is None and read.problem and "treated as absent" in read.problem


@pytest.mark.parametrize("text", ['{"class": "nope", "condition": "c", "reason": "", "since": 1, "gpus": []}',
                                  '{"class": "thermal", "since": 1}', '{"class": "thermal", "condition": "c", '
                                  '"reason": "", "since": 1, "gpus": [{"uuid": "not-a-gpu"}]}', "[]", "nan"])
def test_a_malformed_fault_is_absent_with_a_reason(text: str) -> None:
    read = parse_fault(text)
    assert read.value is None and read.problem


def test_absent_annotations_are_no_problem() -> None:
    assert parse_stage(None).problem is None and parse_fault(None).problem is None
    assert parse_history(None).value == () and parse_history(None).problem is None


def test_history_keeps_the_entries_it_can_use_and_says_how_many_it_dropped() -> None:
    text = json.dumps([{"action": "reboot", "at": 5, "result": "success"}, {"action": "reboot"}, 7,
                       {"action": "reset-gpu", "at": 1, "result": "failed: x"}])
    read = parse_history(text)
    assert [e.action for e in read.value] == ["reset-gpu", "reboot"]  # oldest first
    assert read.problem == "the history annotation has 2 entries it cannot use: left out"


def test_pruning_keeps_the_window_and_the_newest_recovery() -> None:
    entries = (HistoryEntry("validate", 10.0, "passed"), HistoryEntry("validate", 20.0, "passed"),
               HistoryEntry("reboot", 30.0, "success"), HistoryEntry("reboot", 900.0, "success"))
    assert prune_history(entries, 1000.0, 500.0) == (entries[1], entries[3])
    many = tuple(HistoryEntry("reboot", float(i), "success") for i in range(100))
    assert len(prune_history(many, 100.0, 1000.0)) == HISTORY_LIMIT
    assert format_history(entries[:1]) == '[{"action":"validate","at":10.0,"result":"passed"}]'


def test_gpus_are_read_from_the_health_monitors_message() -> None:
    message = (f'{UUID} (0000:17:00.0): XID 79 "GPU has fallen off the bus"; GPU-aa (0000:2A:00.0): XID 79; '
               f"{UUID} (0000:17:00.0) again")
    assert gpus_in_message(message) == (GpuRef(UUID, "0000:17:00.0"), GpuRef("GPU-aa", "0000:2a:00.0"))
    assert gpus_in_message("no GPU here") == ()


def test_reset_requests_and_results() -> None:
    request = ResetRequest("abc123", (UUID, "GPU-bb"))
    assert parse_reset_request(format_reset_request(request)).value == request
    for result in (ResetResult("abc123", True), ResetResult("abc123", False, "In use by another client")):
        assert parse_reset_result(format_reset_result(result)).value == result
    assert parse_reset_result("abc123:failed:").value == ResetResult("abc123", False, "no reason given")
    for garbage in ("abc123", "abc123:maybe", ":success", "abc123:success:extra"):
        assert parse_reset_result(garbage).value is None and parse_reset_result(garbage).problem
    assert parse_reset_request("abc123:").value is None and parse_reset_request("abc:not-a-uuid").problem


def test_the_agent_carries_out_a_reset_once() -> None:
    notes = {RESET_REQUEST_ANNOTATION: f"r1:{UUID}"}
    assert pending_reset(notes) == ResetRequest("r1", (UUID,))
    assert pending_reset({**notes, RESET_RESULT_ANNOTATION: "r0:success"}) is not None  # an old request's result
    assert pending_reset({**notes, RESET_RESULT_ANNOTATION: "r1:failed:busy"}) is None


def test_the_agent_reboots_only_on_the_boot_it_was_asked_on() -> None:
    stage = format_stage(StageRecord("reboot", 1.0, 1, "r1", "boot-a", 2.0))
    notes = {REBOOT_REQUEST_ANNOTATION: "r1", STAGE_ANNOTATION: stage}
    assert pending_reboot(notes, "boot-a") == "r1"
    assert pending_reboot(notes, "boot-b") is None  # already rebooted: the request waits for the controller
    assert pending_reboot({**notes, STAGE_ANNOTATION: "{"}, "boot-a") is None
    assert pending_reboot({**notes, REBOOT_REQUEST_ANNOTATION: "r2"}, "boot-a") is None


def test_request_ids_are_the_same_for_the_same_step() -> None:
    assert request_id("n1", 5.0, "reboot", 1) == request_id("n1", 5.0, "reboot", 1)
    assert len({request_id("n1", 5.0, "reboot", 1), request_id("n1", 5.0, "reboot", 2),
                request_id("n2", 5.0, "reboot", 1), request_id("n1", 6.0, "reboot", 1)}) == 4


def test_the_upgrade_is_blocked_by_any_state_but_observing() -> None:
    label = "nvidia.com/gpu-remediation.state"
    assert not blocks_upgrade({}) and not blocks_upgrade({label: "observing"})
    assert all(blocks_upgrade({label: s}) for s in ("deferred", "quarantined", "rebooting", "needs-human"))


def test_a_request_id_or_uuid_with_a_trailing_newline_is_not_one() -> None:
    """Python's `$` matches before a final newline: ids are read with fullmatch (issue 27's pattern rule); white
    space around the listed UUIDs is stripped by design."""
    from gpu_operator.remediation import pending_reset

    assert pending_reset({"nvidia.com/gpu-remediation.reset-request": "abc123\n:GPU-1"}) is None
    assert pending_reset({"nvidia.com/gpu-remediation.reset-request": "abc123:GPU-1"}) is not None
