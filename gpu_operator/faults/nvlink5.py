"""XIDs 144-150 (NVLink 5): the action is read from the message's interrupt info and error status.

The driver logs `Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 09 (0x025525c6 0x00000000 ...)`: the
sub-component, fatal or not, cross-containment, injected, the link, then seven registers of which the first is the
interrupt info and the second the error status. NVIDIA's catalog (sheet "Xid 144-150 Decode", the bucket
WORKFLOW_NVLINK5_ERR) lists, per XID, rows of an interrupt info mask and error status values with their bucket
(RESET_GPU, IGNORE, or XID_154_EVAL: take the XID 154's action when one comes, else restart the application).
A promotable row (severity `Non-fatal*`) has a second mask ("action 2") under which the same error is fatal.

The masks come in two forms: V1 for drivers before R575 (the subcode in interrupt info bits 9:5) and V2 from R575
(bits 6:0). A message does not say which driver wrote it, so both forms are tried; the catalog's tests prove that
no interrupt info and error status match rows of different buckets across the two forms (nor within one), so the
verdict does not depend on the driver branch. NVSentinel reads V1 only and drops action 2
(health-monitors/syslog-health-monitor/pkg/xid/parser/csv.go `parseNVL5XID`, `matchesNVL5Rule`); error status is
compared as a number here, not as text, so `0x1` and `0x00000001` are the same status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_operator.faults.catalog import DecodeRule, catalog

__all__ = ["NVLINK5_XIDS", "Nvlink5Decode", "decode_nvlink5", "read_nvlink5"]

#: The XIDs whose action the decode sheet gives.
NVLINK5_XIDS: range = range(144, 151)
#: `Link <n> (<intrInfo> <errorStatus> ...`: the first two registers after the link number.
_REGISTERS = re.compile(r"\bLink\s+-?\d+\s*\(\s*(0x[0-9a-fA-F]+)[\s,]+(0x[0-9a-fA-F]+)")


@dataclass(frozen=True, slots=True)
class Nvlink5Decode:
    """The decode row a message matched, under which mask form, and the bucket it gives."""

    rule: DecodeRule
    form: str
    """`V1` (drivers before R575) or `V2` (R575 and later)."""
    promoted: bool
    """Whether the row's "action 2" mask matched (a promotable error that is fatal this time)."""
    intr_info: int
    error_status: int

    @property
    def immediate(self) -> str:
        return self.rule.promoted.immediate if self.promoted and self.rule.promoted else self.rule.immediate

    @property
    def fault_class(self) -> str:
        return self.rule.promoted.fault_class if self.promoted and self.rule.promoted else self.rule.fault_class

    @property
    def action(self) -> str:
        return self.rule.promoted.action if self.promoted and self.rule.promoted else self.rule.action


def read_nvlink5(message: str) -> tuple[int, int] | None:
    """The interrupt info and error status of an XID 144-150 message; None when it has no register list."""
    found = _REGISTERS.search(message)
    return None if found is None else (int(found.group(1), 16), int(found.group(2), 16))


def _matches(rule: DecodeRule, intr_info: int, error_status: int) -> list[Nvlink5Decode]:
    if not rule.covers(error_status):
        return []
    found = []
    for form, mask, promoted in (("V2", rule.v2, rule.promoted and rule.promoted.v2),
                                 ("V1", rule.v1, rule.promoted and rule.promoted.v1)):
        if mask.matches(intr_info):
            found.append(Nvlink5Decode(rule, form, False, intr_info, error_status))
        elif promoted and promoted.matches(intr_info):
            found.append(Nvlink5Decode(rule, form, True, intr_info, error_status))
    return found


def decode_nvlink5(code: int, message: str) -> Nvlink5Decode | None:
    """The decode of an XID 144-150 message; None when it is not one, or no row of the catalog covers it.

    The first matching row answers: every row that matches gives the same bucket (the catalog's tests prove it).
    """
    registers = read_nvlink5(message)
    if code not in NVLINK5_XIDS or registers is None:
        return None
    found = (match for rule in catalog().nvlink5_decode.get(code, ()) for match in _matches(rule, *registers))
    return next(found, None)
