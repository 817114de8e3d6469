"""XID 154 and NVML's GPU recovery action: the driver itself says what the GPU needs.

XID 154 ("GPU Recovery Action Changed", the catalog's bucket XID_154) comes with the XIDs it summarises:
`Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)`. The value
after "to" is NVML's `nvmlDeviceGpuRecoveryAction_t` (the field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reads the same
value): 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset, and in newer drivers 5 recover the
IMEX domain, 6 bus reset, 7 system reboot. The catalog names the texts "None", "Drain P2P", "Drain and Reset",
"GPU Reset Required" and "Node Reboot Required"; drivers also print others for the same values ("OS Reboot" for 2,
"PF FLR" for 1), so the value decides and the text is read only when a message has no value.

Actions 1-4 take NVIDIA's verdict from their DCGM twins (`DCGM_FR_GPU_RECOVERY_RESET`, `_REBOOT`, `_DRAIN_P2P`,
`_DRAIN_RESET` in dcgmerrorsmapping.csv). NVSentinel reads the text in the last parentheses only, and any text but
its four becomes CONTACT_SUPPORT (health-monitors/syslog-health-monitor/pkg/xid/parser/csv.go
`getRecommendedActionForXid`); here too a stated action the catalog does not know is CONTACT_SUPPORT. A 154
without a readable action (NVML's XID event carries no message) keeps the catalog's verdict for the bucket.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpu_operator.faults.catalog import catalog
from gpu_operator.faults.classes import (
    FAULT_CLASSES,
    HARDWARE_FAILURE,
    INFORMATIONAL,
    REBOOT_REQUIRED,
    RESET_REQUIRED,
    Fault,
    FaultClass,
)

__all__ = [
    "RECOVERY_ACTIONS",
    "RECOVERY_XID",
    "RecoveryAction",
    "classify_recovery_action",
    "read_recovery_action",
    "recovery_action_fault",
    "recovery_message_fault",
]

RECOVERY_XID = 154
_REASON = f"XID{RECOVERY_XID}"


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """One value of NVML's GPU recovery action: its NVML name, the driver's text, and where its verdict comes from.

    `dcgm` names the DCGM health failure that reports it (NVIDIA's verdict); the others carry their own.
    """

    value: int
    nvml: str
    text: str
    dcgm: str | None = None
    action: str = "CONTACT_SUPPORT"
    fault_class: str = HARDWARE_FAILURE.name


RECOVERY_ACTIONS: Mapping[int, RecoveryAction] = MappingProxyType({a.value: a for a in (
    RecoveryAction(0, "NVML_GPU_RECOVERY_ACTION_NONE", "None", action="NONE", fault_class=INFORMATIONAL.name),
    RecoveryAction(1, "NVML_GPU_RECOVERY_ACTION_GPU_RESET", "GPU Reset Required", "DCGM_FR_GPU_RECOVERY_RESET"),
    RecoveryAction(2, "NVML_GPU_RECOVERY_ACTION_NODE_REBOOT", "Node Reboot Required", "DCGM_FR_GPU_RECOVERY_REBOOT"),
    RecoveryAction(3, "NVML_GPU_RECOVERY_ACTION_DRAIN_P2P", "Drain P2P", "DCGM_FR_GPU_RECOVERY_DRAIN_P2P"),
    RecoveryAction(4, "NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET", "Drain and Reset",
                   "DCGM_FR_GPU_RECOVERY_DRAIN_RESET"),
    # Recovering an IMEX domain is a cluster operation a person starts.
    RecoveryAction(5, "NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN", "Recover IMEX Domain"),
    RecoveryAction(6, "NVML_GPU_RECOVERY_ACTION_BUS_RESET", "Bus Reset", action="COMPONENT_RESET",
                   fault_class=RESET_REQUIRED.name),
    RecoveryAction(7, "NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT", "System Reboot", action="RESTART_BM",
                   fault_class=REBOOT_REQUIRED.name),
)})
_BY_TEXT = {action.text.casefold(): action for action in RECOVERY_ACTIONS.values()}
#: "... recovery action changed [from X] to 0x2 (Node Reboot Required)": the value and/or the text after "to".
_CHANGED = re.compile(r"recovery\s+action\s+changed\b(?P<change>.*)", re.IGNORECASE | re.DOTALL)
_TO = re.compile(r"\bto\s+(?P<value>0x[0-9a-fA-F]+|\d+)?\s*(?:\((?P<text>[^)]*)\)|(?P<bare>[A-Za-z][\w /-]*))?",
                 re.IGNORECASE)


def read_recovery_action(message: str) -> tuple[int | None, str] | None:
    """The value and text an XID 154 message changes the recovery action *to*; None when it says none."""
    changed = _CHANGED.search(message)
    target = _TO.search(changed.group("change")) if changed else None
    if target is None:
        return None
    text = (target.group("text") or target.group("bare") or "").strip()
    if target.group("value") is None and not text:
        return None
    value = target.group("value")
    return (None if value is None else int(value, 0)), text


def _resolve(action: RecoveryAction) -> tuple[str, str]:
    """(NVIDIA's recommended action, class) of one recovery action."""
    if action.dcgm is None:
        return action.action, action.fault_class
    twin = catalog().dcgm_health[action.dcgm]
    return twin.action, twin.fault_class


def _unknown(shown: str) -> Fault:
    return Fault(HARDWARE_FAILURE, "CONTACT_SUPPORT", _REASON, None,
                 f"GPU recovery action {shown}: not an action this catalog knows")


def recovery_action_fault(value: int, text: str = "") -> Fault:
    """The verdict for a GPU recovery action, read from NVML or from an XID 154 message (`text` names it there)."""
    known = RECOVERY_ACTIONS.get(value)
    if known is None:
        return _unknown(f"0x{value:x} ({text or 'unknown'})")
    action, name = _resolve(known)
    detail = f"GPU recovery action 0x{value:x} ({text or known.text})"
    return Fault(FAULT_CLASSES[name], action, _REASON, known.dcgm, detail)


def classify_recovery_action(value: int) -> FaultClass:
    """The fault class of NVML's GPU recovery action (`nvmlDeviceGetGpuRecoveryAction`, the XID 154 value)."""
    return recovery_action_fault(value).fault_class


def recovery_message_fault(message: str) -> Fault | None:
    """The verdict an XID 154 message states; None when it states no action (the catalog's bucket applies)."""
    target = read_recovery_action(message)
    if target is None:
        return None
    value, text = target
    if value is None:
        known = _BY_TEXT.get(text.casefold())
        if known is None:
            return _unknown(repr(text))
        value = known.value
    return recovery_action_fault(value, text)
