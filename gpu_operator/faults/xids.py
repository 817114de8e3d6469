"""XIDs: the driver's numbers for GPU faults, classified by NVIDIA's catalog.

Every XID of the catalog (1-172) has one class, from its immediate resolution bucket (:mod:`.buckets`). Two take
their verdict from their message when there is one: XIDs 144-150 from the decode of their interrupt info
(:mod:`.nvlink5`), XID 154 from the recovery action it names (:mod:`.recovery`). An NVML XID event carries no
message, so the agent passes the kernel log line when it has it (:func:`parse_xid_line` reads one); without it the
catalog's bucket decides. An XID the catalog does not list (a newer driver's) is CONTACT_SUPPORT, as NVSentinel
defaults it.

The device plugin keeps its own, older rule beside the catalog: like NVIDIA's k8s-device-plugin (v0.20.0
internal/rm/health.go `getDisabledHealthCheckXids`) it never marks a device Unhealthy for the application XIDs
13, 31, 43, 45, 68 and 109. They agree except for 109 (context switch timeout), which the catalog says needs a
GPU reset: the plugin keeps advertising the device as NVIDIA's does, and the remediation acts on 109 through the
catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_operator.faults.catalog import XidEntry, catalog
from gpu_operator.faults.classes import FAULT_CLASSES, HARDWARE_FAILURE, Fault, FaultClass
from gpu_operator.faults.nvlink5 import NVLINK5_XIDS, decode_nvlink5
from gpu_operator.faults.recovery import RECOVERY_XID, recovery_message_fault

__all__ = [
    "CATALOG_XIDS",
    "DEVICE_PLUGIN_SKIPPED_XIDS",
    "XidLine",
    "classify_xid",
    "parse_xid_line",
    "xid_entry",
    "xid_fault",
    "xids_of",
]

#: The XIDs NVIDIA's catalog covers, each in exactly one class.
CATALOG_XIDS: range = range(1, 173)
#: The XIDs NVIDIA's device plugin never marks a device Unhealthy for ("application errors: the GPU should still
#: be healthy").
DEVICE_PLUGIN_SKIPPED_XIDS: frozenset[int] = frozenset({13, 31, 43, 45, 68, 109})
#: `NVRM: Xid (PCI:0000:17:00): 79, pid=..., name=..., GPU has fallen off the bus.` (NVSentinel's pattern, with
#: the optional pid, name and channel fields.)
_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F:.]+)\): (?P<code>\d+)(?:, (?P<message>.*))?")


@dataclass(frozen=True, slots=True)
class XidLine:
    """One XID line of the kernel log: the GPU's PCI address as the driver prints it, the XID and the rest."""

    pci: str
    code: int
    message: str


def parse_xid_line(line: str) -> XidLine | None:
    """The XID of an `NVRM: Xid (PCI:...): <code>, ...` kernel log line; None for any other line."""
    found = _LINE.search(line)
    if found is None:
        return None
    return XidLine(found.group("pci"), int(found.group("code")), (found.group("message") or "").strip())


def xid_entry(code: int) -> XidEntry | None:
    """NVIDIA's catalog entry for an XID; None when the catalog does not list it."""
    return catalog().xids.get(code)


def _named(entry: XidEntry) -> str:
    return f'XID {entry.code} "{entry.description}"' if entry.description != "Unused" else f"XID {entry.code}"


def xid_fault(code: int, message: str = "") -> Fault:
    """The verdict for an XID, refined by its message where the catalog reads one (144-150, 154)."""
    if code < 1:
        raise ValueError(f"XID {code} is not an XID: the driver numbers them from 1")
    reason = f"XID{code}"
    entry = xid_entry(code)
    if entry is None:
        return Fault(HARDWARE_FAILURE, "CONTACT_SUPPORT", reason, None,
                     f"XID {code}: not in NVIDIA's XID catalog")
    if code == RECOVERY_XID and message:
        stated = recovery_message_fault(message)
        if stated is not None:
            detail = f"{_named(entry)}: {stated.detail}"
            return Fault(stated.fault_class, stated.action, reason, entry.immediate, detail)
    if code in NVLINK5_XIDS and message:
        decoded = decode_nvlink5(code, message)
        if decoded is not None:
            detail = (f"{_named(entry)} {decoded.rule.subcode} (interrupt info 0x{decoded.intr_info:08x}, error "
                      f"status 0x{decoded.error_status:08x}, {decoded.form}): {decoded.immediate}")
            return Fault(FAULT_CLASSES[decoded.fault_class], decoded.action, reason, decoded.immediate, detail)
    bucket = entry.immediate or "no bucket"
    return Fault(FAULT_CLASSES[entry.fault_class], entry.action, reason, entry.immediate, f"{_named(entry)}: {bucket}")


def classify_xid(code: int, message: str = "") -> FaultClass:
    """The fault class of an XID (see :func:`xid_fault`)."""
    return xid_fault(code, message).fault_class


def xids_of(*classes: str) -> tuple[int, ...]:
    """The catalog's XIDs whose class (without a message to refine it) is one of these, ascending."""
    unknown = set(classes) - set(FAULT_CLASSES)
    if unknown:
        raise KeyError(f"unknown fault classes {sorted(unknown)}: use {', '.join(FAULT_CLASSES)}")
    return tuple(code for code, entry in sorted(catalog().xids.items()) if entry.fault_class in classes)
