"""XIDs 144-150 decoded from their messages by NVIDIA's "Xid 144-150 Decode" sheet.

The message form is the catalog's (bucket WORKFLOW_NVLINK5_ERR): `Xid (PCI:...): <xid> <sub component> <fatal>
<cross contain> <injected> Link <n> (<intrInfo> <errorStatus> <debug data x5>)`. Each sample's interrupt info is
worked out by hand from the sheet's masks (V1, drivers before R575: subcode in bits 9:5; V2, R575 on: bits 6:0),
so the decode is checked against the sheet, not against itself. NVSentinel's csv_test.go contributes the XID 149
sample; its parser (pkg/xid/parser/csv.go) reads only V1 and no "action 2".
"""

from __future__ import annotations

import itertools

import pytest

from gpu_operator.faults import catalog, classify_xid, decode_nvlink5, xid_fault
from gpu_operator.faults.catalog import DecodeRule, IntrInfoMask
from gpu_operator.faults.nvlink5 import read_nvlink5


def _message(xid: int, subcode: str, intr_info: int, status: int, fatal: str = "Fatal") -> str:
    return (f"NVRM: Xid (PCI:0018:01:00): {xid}, {subcode}  {fatal}   XC0 i0 Link 09 "
            f"(0x{intr_info:08x} 0x{status:08x} 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")


#: (xid, subcode, interrupt info, error status, bucket, class, mask form)
SAMPLES = [
    # 144 SAW_MVB: V1 bits 9:0 0000100001; status 0x2 fatal, 0x1 not.
    (144, "SAW_MVB", 0x00000021, 0x2, "RESET_GPU", "nvlink", "V1"),
    (144, "SAW_MVB", 0x00000021, 0x1, "IGNORE", "informational", "V1"),
    # ... and its V2 form, bits 6:0 0000001.
    (144, "SAW_MVB", 0x00000001, 0x10, "RESET_GPU", "nvlink", "V2"),
    # 145 RLW_REMAP (V1 0010000010): status 0x1 waits for an XID 154 (else the application restarts), 0x40 fatal.
    (145, "RLW_REMAP", 0x00000082, 0x1, "XID_154_EVAL", "application", "V1"),
    (145, "RLW_REMAP", 0x00000082, 0x40, "RESET_GPU", "nvlink", "V1"),
    # 145 RLW_RXPIPE, promotable: V1 bit 10 clear (00011000010) is non-fatal, set (10011000010) is "action 2".
    (145, "RLW_RXPIPE", 0x000000C2, 0x1, "IGNORE", "informational", "V1"),
    (145, "RLW_RXPIPE", 0x000004C2, 0x1, "RESET_GPU", "nvlink", "V1"),
    # ... and in V2 bit 7 (00000110 / 10000110).
    (145, "RLW_RXPIPE", 0x00000006, 0x4, "IGNORE", "informational", "V2"),
    (145, "RLW_RXPIPE", 0x00000086, 0x4, "RESET_GPU", "nvlink", "V2"),
    # 146 TLW_CTRL (V1 0100100011): 0x4 fatal, 0x1 not.
    (146, "TLW_CTRL", 0x00000123, 0x4, "RESET_GPU", "nvlink", "V1"),
    (146, "TLW_CTRL", 0x00000123, 0x1, "IGNORE", "informational", "V1"),
    # 147 TREX (V1 0110000100) and 148 NVLPW_CTRL (V1 0000000101): only non-fatal rows.
    (147, "TREX", 0x00000184, 0x1, "IGNORE", "informational", "V1"),
    (148, "NVLPW_CTRL", 0x00000005, 0x80000000, "IGNORE", "informational", "V1"),
    # 149 NETIR_LINK_EVT (V1 0111000110), link-down reason in bits 25:20: 100101 (peer) fatal, 100110 not.
    (149, "NETIR_LINK_EVT", 0x025525C6, 0x0, "RESET_GPU", "nvlink", "V1"),  # NVSentinel csv_test.go
    (149, "NETIR_LINK_EVT", 0x026001C6, 0x0, "IGNORE", "informational", "V1"),
    # ... V2 form 0010001 with the same reason bits.
    (149, "NETIR_LINK_EVT", 0x02500011, 0x0, "RESET_GPU", "nvlink", "V2"),
    # 149 NETIR_MFDE_EVENT (V1 1001000110): 0x1 fatal, 0x3 not.
    (149, "NETIR_MFDE_EVENT", 0x00000246, 0x1, "RESET_GPU", "nvlink", "V1"),
    (149, "NETIR_MFDE_EVENT", 0x00000246, 0x3, "IGNORE", "informational", "V1"),
    # 150 MSE: degraded (status 0 or 0xFFFFFFFF) and watchdog, all fatal; interrupt info 0 fits both forms, and
    # the newer is tried first.
    (150, "MSE", 0x00000000, 0xFFFFFFFF, "RESET_GPU", "nvlink", "V2"),
]


@pytest.mark.parametrize(("xid", "subcode", "intr_info", "status", "bucket", "name", "form"), SAMPLES)
def test_each_sample_decodes_to_the_sheets_bucket(xid: int, subcode: str, intr_info: int, status: int, bucket: str,
                                                  name: str, form: str) -> None:
    message = _message(xid, subcode, intr_info, status)
    decoded = decode_nvlink5(xid, message)
    assert decoded is not None
    assert (decoded.immediate, decoded.fault_class, decoded.form) == (bucket, name, form)
    assert decoded.rule.subcode.startswith(subcode)
    fault = xid_fault(xid, message)
    assert (fault.fault_class.name, fault.bucket, fault.reason) == (name, bucket, f"XID{xid}")
    assert f"interrupt info 0x{intr_info:08x}" in fault.detail


def test_every_nvlink5_xid_has_a_decoded_sample() -> None:
    assert {sample[0] for sample in SAMPLES} == set(range(144, 151))


def test_the_registers_are_read_after_the_link_number() -> None:
    assert read_nvlink5(_message(149, "NETIR_LINK_EVT", 0x025525C6, 0x7)) == (0x025525C6, 0x7)
    assert read_nvlink5("149, NETIR_LINK_EVT Fatal XC0 i0 Link -1 (0x1, 0x2)") == (0x1, 0x2)
    assert read_nvlink5("NVLINK: RLW Error") is None


def test_without_registers_the_catalog_bucket_decides() -> None:
    """An NVML XID event carries no message: WORKFLOW_NVLINK5_ERR, whose fatal rows all say RESET_GPU."""
    for code in range(144, 151):
        fault = xid_fault(code)
        assert (fault.fault_class.name, fault.bucket) == ("nvlink", "WORKFLOW_NVLINK5_ERR")
        assert classify_xid(code, "NVLINK: garbled") is fault.fault_class


def test_registers_no_row_covers_keep_the_catalog_bucket() -> None:
    """147 TREX has rows only for status 0x1 and 0x80000000."""
    message = _message(147, "TREX", 0x00000184, 0x2)
    assert decode_nvlink5(147, message) is None
    assert xid_fault(147, message).bucket == "WORKFLOW_NVLINK5_ERR"


def test_other_xids_are_not_decoded() -> None:
    assert decode_nvlink5(74, _message(74, "NVLINK", 0x21, 0x2)) is None


def _effective(rule: DecodeRule, form: str) -> list[tuple[IntrInfoMask, str]]:
    masks = [(rule.v1 if form == "V1" else rule.v2, rule.immediate)]
    if rule.promoted:
        masks.append((rule.promoted.v1 if form == "V1" else rule.promoted.v2, rule.promoted.immediate))
    return masks


def _overlap(first: IntrInfoMask, second: IntrInfoMask) -> bool:
    """Whether some interrupt info matches both: they agree on every bit both read."""
    both = first.mask & second.mask
    return first.value & both == second.value & both


def test_no_interrupt_info_decodes_to_two_buckets_whatever_the_driver() -> None:
    """A message does not say which driver wrote it, so V1 and V2 are both tried: that is only sound while no
    interrupt info and error status match rows of different buckets, across the two forms or within one."""
    conflicts = []
    for xid, rules in catalog().nvlink5_decode.items():
        for first, second in itertools.product(rules, repeat=2):
            if first.error_status and second.error_status and not first.error_status & second.error_status:
                continue
            for a_form, b_form in (("V1", "V1"), ("V2", "V2"), ("V1", "V2")):
                for (a, a_bucket), (b, b_bucket) in itertools.product(_effective(first, a_form),
                                                                      _effective(second, b_form)):
                    if a_bucket != b_bucket and _overlap(a, b):
                        conflicts.append((xid, first.subcode, a_form, a_bucket, second.subcode, b_form, b_bucket))
    assert conflicts == []
