"""The text formats the monitor writes and reads back: condition entries and the request annotations."""

from __future__ import annotations

import pytest

from gpu_operator.agents.health_monitor.conditions import condition_changes, desired_conditions
from gpu_operator.agents.health_monitor.findings import (
    ENTRY_SEPARATOR,
    GpuRef,
    level_finding,
    parse_entries,
    recovery_finding,
    xid_finding,
)
from gpu_operator.agents.health_monitor.requests import (
    RESET_RESULT,
    RequestError,
    answered,
    failed,
    parse_reboot_request,
    parse_reset_request,
    succeeded,
)
from gpu_operator.faults import catalog, health_fault

GPU = GpuRef("GPU-879bf707-73f0-4d71-a7ec-cf5c106427d9", "0000:18:00.0")
MIG = "MIG-5f6c1d6e-8a55-4c1e-9d43-3c2b8f0e7a10"


def test_no_catalog_text_contains_the_entry_separator() -> None:
    texts = [x.description for x in catalog().xids.values()] + [str(x.immediate) for x in catalog().xids.values()]
    assert not [text for text in texts if ENTRY_SEPARATOR in text]


def test_entries_read_back_as_written() -> None:
    findings = [
        level_finding(health_fault("NVMLInitFailed"), None, "NVML: Unknown Error"),
        xid_finding(79, GPU),
        level_finding(health_fault("GPUMissing"), GpuRef(None, "0000:2a:00.0"), "on the PCI bus, not listed by NVML"),
        recovery_finding(2, GPU),
        xid_finding(154, GPU, recovery_action=1),
    ]
    message = ENTRY_SEPARATOR.join(f.entry for f in findings)
    read = parse_entries(message)
    assert [(e.gpu, e.reason, e.latched) for e in read] == [
        (None, "NVMLInitFailed", False), (GPU, "XID79", True), (GpuRef(None, "0000:2a:00.0"), "GPUMissing", False),
        (GPU, "XID154", False), (GPU, "XID154", True),
    ]
    assert ENTRY_SEPARATOR.join(
        e.finding(f.fault_class).entry for e, f in zip(read, findings, strict=True)) == message


def test_desired_conditions_put_node_wide_entries_first_and_keep_the_first_reason() -> None:
    desired = desired_conditions([xid_finding(79, GPU), level_finding(health_fault("GPULost"), GPU, "lost")])
    fallen = desired["GPUFallenOffBus"]
    assert (fallen.status, fallen.reason) == ("True", "XID79")
    assert desired["GPUThermal"].status == "False"


def test_changes_keep_the_transition_time_unless_the_status_moves() -> None:
    desired = desired_conditions([xid_finding(48, GPU)])
    current = [{"type": "GPUResetRequired", "status": "True", "reason": "XID62", "message": "old",
                "lastTransitionTime": "2025-01-01T00:00:00Z", "lastHeartbeatTime": "2025-01-01T00:00:00Z"},
               {"type": "GPUThermal", "status": "False", "reason": desired["GPUThermal"].reason,
                "message": desired["GPUThermal"].message, "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    changes = {c["type"]: c for c in condition_changes(current, desired, "2025-06-01T00:00:00Z")}
    assert changes["GPUResetRequired"]["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert changes["GPUResetRequired"]["lastHeartbeatTime"] == "2025-06-01T00:00:00Z"
    assert "GPUThermal" not in changes
    assert changes["GPUFallenOffBus"]["lastTransitionTime"] == "2025-06-01T00:00:00Z"
    beat = condition_changes(current, desired, "2025-06-01T00:00:00Z", heartbeat=True)
    assert {c["type"] for c in beat} == set(desired)


def test_reset_requests() -> None:
    request = parse_reset_request(f"a1b2c3:{GPU.uuid}, {MIG},{GPU.uuid}")
    assert (request.request_id, request.uuids) == ("a1b2c3", (GPU.uuid, MIG))
    for text, problem in [
        (f"-bad:{GPU.uuid}", "is not a letter or digit"),
        ("a1", "no GPU named after 'a1'"),
        ("a1:", "no GPU named after 'a1'"),
        ("a1:GPU 0", "'GPU 0' is not a GPU or MIG UUID"),
    ]:
        with pytest.raises(RequestError, match=problem):
            parse_reset_request(text)
    with pytest.raises(RequestError) as raised:
        parse_reset_request("a1:nope")
    assert raised.value.request_id == "a1"


def test_reboot_requests_and_results() -> None:
    assert parse_reboot_request(" r-7 ") == "r-7"
    with pytest.raises(RequestError):
        parse_reboot_request("r 7")
    assert succeeded("r-7") == "r-7:success"
    assert failed("r-7", "nvidia-smi said\nno") == "r-7:failed:nvidia-smi said no"
    assert failed("r-7", "") == "r-7:failed:no reason given"
    assert answered({RESET_RESULT: "r-7:failed:x:y"}, RESET_RESULT, "r-7") == "failed:x:y"
    assert answered({RESET_RESULT: "r-6:success"}, RESET_RESULT, "r-7") is None
