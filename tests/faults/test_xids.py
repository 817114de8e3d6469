"""XIDs by NVIDIA's catalog: every XID 1-172 in exactly one class, the classes the remediation relies on, the
device plugin's skip list, and kernel log lines read as NVSentinel reads them.

Facts: NVIDIA's Xid-Catalog.xlsx (NVSentinel health-monitors/syslog-health-monitor/pkg/common/, reference data
`nvsentinel/Xid-Catalog.xlsx`), sheet `Xids`, column "Resolution Bucket (Immediate Action)"; NVSentinel's
`MapActionStringToProto` (pkg/common/common.go) for the recommended actions.
"""

from __future__ import annotations

import pytest

from gpu_operator.faults import (
    CATALOG_XIDS,
    DEVICE_PLUGIN_SKIPPED_XIDS,
    FAULT_CLASSES,
    catalog,
    classify_xid,
    parse_xid_line,
    xid_entry,
    xid_fault,
    xids_of,
)


def test_every_xid_of_the_catalog_is_in_exactly_one_class() -> None:
    by_class = {name: set(xids_of(name)) for name in FAULT_CLASSES}
    assert sorted(code for codes in by_class.values() for code in codes) == list(range(1, 173))
    assert set(CATALOG_XIDS) == set(catalog().xids) == set(range(1, 173))
    for code in CATALOG_XIDS:
        assert [name for name, codes in by_class.items() if code in codes] == [classify_xid(code).name]


@pytest.mark.parametrize("code", [13, 31, 43, 45])
def test_the_application_xids_on_their_own_quarantine_nothing(code: int) -> None:
    """13 and 31 RESTART_APP, 43 IGNORE by its bucket but "the GPU remains in a healthy state" after an
    application's fault, 45 WORKFLOW_XID_45 (solo: the application was aborted)."""
    fault = xid_fault(code)
    assert fault.fault_class.name == "application"
    assert not fault.fault_class.quarantine and fault.fault_class.ladder == ("observe",)
    assert fault.fault_class.condition is None and fault.action == "NONE"


def test_79_has_fallen_off_the_bus() -> None:
    fault = xid_fault(79, "GPU has fallen off the bus.")
    assert fault.fault_class.name == "fallen-off-bus" and fault.fault_class.condition == "GPUFallenOffBus"
    assert (fault.action, fault.bucket, fault.reason) == ("RESTART_BM", "RESTART_BM", "XID79")
    assert fault.detail == 'XID 79 "GPU has fallen off the bus": RESTART_BM'


@pytest.mark.parametrize(("code", "bucket"), [
    (48, "WORKFLOW_XID_48"), (62, "RESET_GPU"), (64, "RESET_GPU"), (95, "RESET_GPU"), (119, "RESET_GPU"),
    (120, "RESET_GPU"),
])
def test_the_reset_xids_need_a_gpu_reset(code: int, bucket: str) -> None:
    """NVSentinel maps RESET_GPU and WORKFLOW_XID_48 to COMPONENT_RESET."""
    fault = xid_fault(code)
    assert (fault.fault_class.name, fault.action, fault.bucket) == ("reset-required", "COMPONENT_RESET", bucket)
    assert fault.fault_class.ladder[:3] == ("cordon", "drain", "reset-gpu")


def test_151_needs_a_reboot() -> None:
    fault = xid_fault(151)
    assert (fault.fault_class.name, fault.action) == ("reboot-required", "RESTART_VM")


@pytest.mark.parametrize(("code", "name"), [
    (74, "nvlink"), (145, "nvlink"), (154, "reset-required"),  # the workflows, before their message is read
    (63, "informational"), (92, "informational"),  # IGNORE
    (94, "application"),  # RESTART_APP: the application that met the contained error restarts
    (54, "hardware-failure"), (159, "hardware-failure"),  # CHECK_MECHANICALS, CHECK_UVM: human triage
    (78, "driver-failure"),  # UPDATE_SWFW
    (1, "hardware-failure"),  # an unused XID: CONTACT_SUPPORT
])
def test_the_other_buckets(code: int, name: str) -> None:
    assert classify_xid(code).name == name


@pytest.mark.parametrize(("code", "name"), [
    (162, "informational"), (165, "informational"), (166, "hardware-failure"), (167, "hardware-failure"),
    (168, "reboot-required"), (169, "reset-required"), (171, "reset-required"), (172, "reset-required"),
])
def test_the_xids_without_a_bucket_have_our_decision(code: int, name: str) -> None:
    """162-172 carry no bucket in the catalog: 169 is the newer form of 62, 171/172 detail an XID 48."""
    assert xid_entry(code) is not None and xid_entry(code).immediate is None  # type: ignore[union-attr]
    assert classify_xid(code).name == name


def test_an_xid_the_catalog_lacks_is_contact_support() -> None:
    """NVSentinel's csv.go `parseStandardXID`: "No action found for XID code, defaulting to CONTACT_SUPPORT"."""
    fault = xid_fault(173, "something new")
    assert (fault.fault_class.name, fault.action, fault.reason) == ("hardware-failure", "CONTACT_SUPPORT", "XID173")
    assert "not in NVIDIA's XID catalog" in fault.detail
    with pytest.raises(ValueError, match="XID 0 is not an XID"):
        xid_fault(0)


def test_the_device_plugin_skip_list_is_nvidias() -> None:
    """k8s-device-plugin v0.20.0 internal/rm/health.go `getDisabledHealthCheckXids`: `ignoredXids`."""
    assert DEVICE_PLUGIN_SKIPPED_XIDS == {13, 31, 43, 45, 68, 109}
    assert classify_xid(68).name == "application"
    assert classify_xid(109).name == "reset-required"  # the one the plugin and the catalog disagree on


def test_xids_of_refuses_an_unknown_class() -> None:
    assert xids_of("fallen-off-bus") == (79,)
    with pytest.raises(KeyError, match="unknown fault classes"):
        xids_of("fallen-off")


@pytest.mark.parametrize(("line", "pci", "code", "message"), [
    ("NVRM: Xid (PCI:0000:b5:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x50df30=0x107000e",
     "0000:b5:00", 13, "pid='<unknown>', name=<unknown>, Graphics Exception: ESR 0x50df30=0x107000e"),
    ("[ 123.4] NVRM: Xid (PCI:0000:3f:00): 46", "0000:3f:00", 46, ""),
    ("kernel: NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 "
     "(GPU Reset Required)", "0008:01:00", 154, "GPU recovery action changed from 0x0 (None) to 0x1 "
     "(GPU Reset Required)"),
])
def test_a_kernel_xid_line_is_read(line: str, pci: str, code: int, message: str) -> None:
    """NVSentinel's csv.go `reXidPattern` and its csv_test.go samples."""
    parsed = parse_xid_line(line)
    assert parsed is not None and (parsed.pci, parsed.code, parsed.message) == (pci, code, message)


@pytest.mark.parametrize("line", [
    "NVRM: GPU at PCI:0000:66:00: GPU-12345678-1234-5678-9abc-def012345678", "NVRM: Xid : 32, pid=2280636",
    "NVRM: Xid (PCI:0000:66:00): abc, pid=2280636", "",
])
def test_other_lines_are_not_xids(line: str) -> None:
    assert parse_xid_line(line) is None


def test_a_parsed_line_classifies_with_its_message() -> None:
    parsed = parse_xid_line("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
                            "(Node Reboot Required)")
    assert parsed is not None
    assert classify_xid(parsed.code, parsed.message).name == "reboot-required"
