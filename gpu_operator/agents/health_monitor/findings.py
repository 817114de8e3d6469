"""Findings: one fault on one GPU (or on the node), as the fault catalog classifies it.

A finding is what the health monitor knows is wrong: the catalog's verdict (:class:`gpu_operator.faults.Fault`:
class, NVIDIA's recommended action, the Node condition reason and a one-line detail), the GPU it concerns (by
UUID and PCI bus id; None for the node's driver), and whether it is *latched*:

* an XID is an event: once seen, its finding holds until a reboot of the node or a successful reset of its GPU
  clears it (the GPU does not report "the XID is over");
* a health reading (volatile DBE, pending row remap, a link down, a lost GPU, the driver) is a level: its
  finding holds while the reading says so, and goes with it.

Each finding renders as one entry of its Node condition's message, `GPU-<uuid> (<pci>): <detail>`, and the entry
is read back the same way (:func:`parse_entries`) when an agent restarts and finds its conditions on the Node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_operator.faults import (
    RECOVERY_ACTIONS,
    Fault,
    FaultClass,
    recovery_action_fault,
    xid_fault,
)
from gpu_operator.remediation import XidOverrides

__all__ = [
    "ENTRY_SEPARATOR",
    "Finding",
    "GpuRef",
    "ParsedEntry",
    "level_finding",
    "parse_entries",
    "recovery_finding",
    "xid_finding",
]

#: Between the entries of one condition message (no catalog text contains it; a test keeps it so).
ENTRY_SEPARATOR = "; "
_UNKNOWN_GPU = "unknown GPU"
_UNKNOWN_PCI = "unknown PCI address"
#: Where an entry starts: `GPU-<uuid> (<pci>): ` or `unknown GPU (<pci>): `.
_ENTRY_START = re.compile(r"(?:^|; )(?P<uuid>GPU-[0-9A-Fa-f-]+|unknown GPU) \((?P<pci>[^)]*)\): ")
_XID_DETAIL = re.compile(r"XID (?P<code>\d+)\b")
_LEVEL_REASON = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass(frozen=True, slots=True)
class GpuRef:
    """A GPU as conditions name it: its UUID and its PCI bus id in sysfs form (`0000:17:00.0`)."""

    uuid: str | None
    pci: str | None

    def __str__(self) -> str:
        return f"{self.uuid or _UNKNOWN_GPU} ({self.pci or _UNKNOWN_PCI})"


@dataclass(frozen=True, slots=True)
class Finding:
    """One fault the monitor holds: its verdict, its GPU (None: node-wide) and whether it is latched."""

    fault: Fault
    gpu: GpuRef | None
    latched: bool

    @property
    def fault_class(self) -> FaultClass:
        return self.fault.fault_class

    @property
    def reason(self) -> str:
        return self.fault.reason

    @property
    def key(self) -> tuple[str, str, str | None, str | None]:
        """What makes two findings the same fault: class, reason and GPU (by UUID, else PCI address)."""
        gpu = self.gpu
        return (self.fault_class.name, self.reason, gpu.uuid if gpu else None, gpu.pci if gpu else None)

    @property
    def entry(self) -> str:
        """Its entry in the condition message."""
        return self.fault.detail if self.gpu is None else f"{self.gpu}: {self.fault.detail}"


def xid_finding(code: int, gpu: GpuRef | None, recovery_action: int | None = None,
                overrides: XidOverrides = XidOverrides()) -> Finding | None:
    """The finding of an XID event (None: the config ignores that XID). An XID 154 takes its class from NVML's
    recovery action field when the caller could read it (an NVML event carries no message), as DCGM's
    `MonitorGpuRecoveryAction` reads that field; the config's `remediation.xids` may put an XID in another class."""
    message = ""
    if recovery_action is not None and code == 154:
        known = RECOVERY_ACTIONS.get(recovery_action)
        message = f"GPU recovery action changed to 0x{recovery_action:x} ({known.text if known else 'unknown'})"
    fault = xid_fault(code, message)
    chosen = overrides.fault_class(code, fault.fault_class)
    if chosen is None:
        return None
    if chosen is not fault.fault_class:
        fault = Fault(chosen, fault.action, fault.reason, fault.bucket, f"{fault.detail} (class {chosen.name} by the "
                      "config's remediation.xids.classify)")
    return Finding(fault, gpu, latched=True)


def level_finding(fault: Fault, gpu: GpuRef | None, observed: str) -> Finding:
    """The finding of a health reading: the catalog's verdict with what was read appended to its detail."""
    detail = f"{fault.detail}: {observed}" if observed else fault.detail
    return Finding(Fault(fault.fault_class, fault.action, fault.reason, fault.bucket, detail), gpu, latched=False)


def recovery_finding(value: int, gpu: GpuRef) -> Finding:
    """The level finding of NVML's GPU recovery action field (reason `XID154`, class from the action)."""
    fault = recovery_action_fault(value)
    detail = f"XID154 (NVML recovery action field): {fault.detail}"
    return Finding(Fault(fault.fault_class, fault.action, fault.reason, fault.bucket, detail), gpu, latched=False)


@dataclass(frozen=True, slots=True)
class ParsedEntry:
    """An entry read back from a condition message: its GPU (None: node-wide), detail, reason and latching."""

    gpu: GpuRef | None
    detail: str
    reason: str
    latched: bool

    def finding(self, fault_class: FaultClass) -> Finding:
        """The finding this entry stands for, in the class of the condition it was read from."""
        return Finding(Fault(fault_class, "", self.reason, None, self.detail), self.gpu, self.latched)


def _parsed(gpu: GpuRef | None, detail: str) -> ParsedEntry | None:
    xid = _XID_DETAIL.match(detail)
    if xid is not None:
        return ParsedEntry(gpu, detail, f"XID{xid.group('code')}", latched=True)
    reason = _LEVEL_REASON.match(detail)
    return None if reason is None else ParsedEntry(gpu, detail, reason.group(0), latched=False)


def _gpu(uuid: str, pci: str) -> GpuRef:
    return GpuRef(None if uuid == _UNKNOWN_GPU else uuid, None if pci == _UNKNOWN_PCI else pci)


def parse_entries(message: str) -> list[ParsedEntry]:
    """The entries of a condition message this monitor wrote, in order; text it did not write is skipped."""
    starts = list(_ENTRY_START.finditer(message))
    entries: list[ParsedEntry] = []
    head = message[: starts[0].start()] if starts else message
    for part in filter(None, head.split(ENTRY_SEPARATOR)):
        parsed = _parsed(None, part)
        if parsed is not None:
            entries.append(parsed)
    for position, start in enumerate(starts):
        end = starts[position + 1].start() if position + 1 < len(starts) else len(message)
        parsed = _parsed(_gpu(start.group("uuid"), start.group("pci")), message[start.end():end])
        if parsed is not None:
            entries.append(parsed)
    return entries
