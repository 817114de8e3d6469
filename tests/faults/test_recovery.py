"""XID 154 read from each form of its message, and NVML's GPU recovery action values.

The catalog's trigger conditions for XID 154 give the form `GPU recovery action changed from 0x0 (None) to 0x2
(Node Reboot Required)` and the texts None, Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot Required;
drivers also print "OS Reboot" and "PF FLR" for the same values. NVSentinel (pkg/xid/parser/csv.go
`getRecommendedActionForXid`) reads the last parentheses: GPU Reset Required and Drain and Reset -> COMPONENT_RESET,
Node Reboot Required -> RESTART_BM, None -> NONE, anything else CONTACT_SUPPORT. The values are NVML's
`nvmlDeviceGpuRecoveryAction_t` (pynvml NVML_GPU_RECOVERY_ACTION_*).
"""

from __future__ import annotations

import pynvml
import pytest

from gpu_operator.faults import RECOVERY_ACTIONS, classify_recovery_action, xid_fault
from gpu_operator.faults.recovery import read_recovery_action

_PREFIX = "NVRM: Xid (PCI:0008:01:00): 154, "


@pytest.mark.parametrize(("change", "name", "action"), [
    ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", "reset-required", "COMPONENT_RESET"),
    ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", "reboot-required", "RESTART_BM"),
    ("GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)", "hardware-failure", "CONTACT_SUPPORT"),
    ("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", "reset-required", "COMPONENT_RESET"),
    ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", "informational", "NONE"),
    # the same values under other drivers' texts: the value decides
    ("GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)", "reboot-required", "RESTART_BM"),
    ("GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)", "reset-required", "COMPONENT_RESET"),
    # text only
    ("GPU recovery action changed to GPU Reset Required", "reset-required", "COMPONENT_RESET"),
    ("GPU recovery action changed to Node Reboot Required.", "reboot-required", "RESTART_BM"),
    ("GPU recovery action changed from None to Drain and Reset", "reset-required", "COMPONENT_RESET"),
])
def test_each_message_form_states_its_action(change: str, name: str, action: str) -> None:
    for message in (_PREFIX + change, change):
        fault = xid_fault(154, message)
        assert (fault.fault_class.name, fault.action, fault.reason) == (name, action, "XID154")


def test_an_action_the_catalog_does_not_know_is_contact_support() -> None:
    for change in ("GPU recovery action changed from 0x0 (None) to 0x9 (Recover the Fabric)",
                   "GPU recovery action changed to Replace The Board"):
        fault = xid_fault(154, _PREFIX + change)
        assert (fault.fault_class.name, fault.action) == ("hardware-failure", "CONTACT_SUPPORT")
        assert "not an action this catalog knows" in fault.detail


@pytest.mark.parametrize("message", ["", "GPU Recovery Action Changed", "GPU recovery action changed to", "154"])
def test_without_a_stated_action_the_bucket_decides(message: str) -> None:
    """An NVML XID event has no message; XID_154 alone is read as the first rung, a GPU reset."""
    assert read_recovery_action(message) is None
    fault = xid_fault(154, message)
    assert (fault.fault_class.name, fault.bucket) == ("reset-required", "XID_154")


def test_the_values_are_nvmls() -> None:
    assert {value: getattr(pynvml, action.nvml) for value, action in RECOVERY_ACTIONS.items()} == {
        value: value for value in RECOVERY_ACTIONS}


@pytest.mark.parametrize(("value", "name"), [
    (0, "informational"), (1, "reset-required"), (2, "reboot-required"), (3, "hardware-failure"),
    (4, "reset-required"), (5, "hardware-failure"), (6, "reset-required"), (7, "reboot-required"),
    (42, "hardware-failure"),
])
def test_nvmls_recovery_action_field_classifies(value: int, name: str) -> None:
    """1-4 take DCGM's verdict for DCGM_FR_GPU_RECOVERY_RESET, _REBOOT, _DRAIN_P2P and _DRAIN_RESET."""
    assert classify_recovery_action(value).name == name
