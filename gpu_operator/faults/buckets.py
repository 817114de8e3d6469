"""NVIDIA's resolution buckets and recommended actions, and the fault class each one falls in.

NVIDIA's XID catalog (`Xid-Catalog.xlsx`, docs.nvidia.com/deploy/xid-errors) gives each XID an *immediate*
resolution bucket (what brings the system back into service: RESET_GPU, RESTART_BM, RESTART_APP, ...) and an
*investigatory* one (how to find the cause). NVSentinel turns a bucket into a `RecommendedAction`
(health-monitors/syslog-health-monitor/pkg/common/common.go `MapActionStringToProto`: RESTART_APP and IGNORE are
NONE, RESET_GPU and WORKFLOW_XID_48 are COMPONENT_RESET, the action names map to themselves, anything else is
CONTACT_SUPPORT, which its consistency test confirms for CHECK_UVM, UPDATE_SWFW and CHECK_MECHANICALS). Its DCGM
health mapping (`dcgmerrorsmapping.csv`) names the action directly.

This module is the hand-written half of the catalog: the generator (`tools/generate_fault_catalog.py`) reads
NVIDIA's files, resolves every row through these tables, and fails on a bucket or an XID without a decision, so
a new catalog revision is classified by a person, never by a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from gpu_operator.faults.classes import (
    APPLICATION,
    DRIVER_FAILURE,
    FALLEN_OFF_BUS,
    HARDWARE_FAILURE,
    INFORMATIONAL,
    NVLINK,
    REBOOT_REQUIRED,
    RESET_REQUIRED,
    THERMAL,
)

__all__ = [
    "BUCKETS",
    "DCGM_CLASS_OVERRIDES",
    "DECODE_BUCKETS",
    "RECOMMENDED_ACTIONS",
    "RECOMMENDED_ACTION_CLASSES",
    "UNBUCKETED_XIDS",
    "XID_CLASS_OVERRIDES",
    "Verdict",
]

#: NVSentinel's RecommendedAction values that NVIDIA's files use.
RECOMMENDED_ACTIONS: tuple[str, ...] = ("NONE", "COMPONENT_RESET", "RESTART_VM", "RESTART_BM", "CONTACT_SUPPORT")

#: (recommended action, fault class name).
Verdict = tuple[str, str]

#: Immediate resolution bucket (the Xids sheet's column, and the 144-150 decode's) -> verdict.
BUCKETS: Mapping[str, Verdict] = MappingProxyType({
    "RESTART_APP": ("NONE", APPLICATION.name),
    # Solo: restart the fabric manager; with other XIDs: follow them. Seen on every killed CUDA process.
    "WORKFLOW_XID_45": ("NONE", APPLICATION.name),
    # The 144-150 decode's "XID 154 seen: take its action; no XID 154: RESTART_APP"; the 154 brings its own class.
    "XID_154_EVAL": ("NONE", APPLICATION.name),
    "IGNORE": ("NONE", INFORMATIONAL.name),
    "RESET_GPU": ("COMPONENT_RESET", RESET_REQUIRED.name),
    # Solo: RESET_GPU; with XID 63 or 64: drain and reset.
    "WORKFLOW_XID_48": ("COMPONENT_RESET", RESET_REQUIRED.name),
    # XID 154 without a message to read: the driver asks for recovery; a reset is the first rung, a failed one
    # climbs to a reboot. With its message (or NVML's recovery action field) the class is the one it names.
    "XID_154": ("COMPONENT_RESET", RESET_REQUIRED.name),
    # XID 74: "A GPU reset or node reboot is needed to clear this error" (the catalog's trigger conditions).
    "WORKFLOW_NVLINK_ERR": ("COMPONENT_RESET", NVLINK.name),
    # XIDs 144-150 before their decode; every fatal row of the decode says RESET_GPU.
    "WORKFLOW_NVLINK5_ERR": ("COMPONENT_RESET", NVLINK.name),
    "RESTART_VM": ("RESTART_VM", REBOOT_REQUIRED.name),
    "RESTART_BM": ("RESTART_BM", FALLEN_OFF_BUS.name),
    "CONTACT_SUPPORT": ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    # NVSentinel's human-triage buckets (its xid_catalog_consistency_test.go `manualTriageBuckets`).
    "CHECK_MECHANICALS": ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    "CHECK_UVM": ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    # XID 78, vGPU start error: a guest and host driver that do not fit; new software, not a reboot.
    "UPDATE_SWFW": ("CONTACT_SUPPORT", DRIVER_FAILURE.name),
})

#: The 144-150 decode's buckets: its rows are NVLink faults, so a row that acts is of the `nvlink` class.
DECODE_BUCKETS: Mapping[str, Verdict] = MappingProxyType({
    "RESET_GPU": ("COMPONENT_RESET", NVLINK.name),
    "IGNORE": BUCKETS["IGNORE"],
    "XID_154_EVAL": BUCKETS["XID_154_EVAL"],
})

#: XIDs the catalog lists without an immediate bucket (162-172 in the 2025 catalog): our decision for each.
UNBUCKETED_XIDS: Mapping[int, Verdict] = MappingProxyType({
    # Power smoothing circuitry re-engaged, disengaged, low or exhausted lifetime: "No GPU reset required";
    # power swings to watch, GPUs to plan replacing.
    162: ("NONE", INFORMATIONAL.name),
    163: ("NONE", INFORMATIONAL.name),
    164: ("NONE", INFORMATIONAL.name),
    165: ("NONE", INFORMATIONAL.name),
    # Confidential computing only: traffic before the link was set up for encryption, an interrupt in CC mode.
    166: ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    170: ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    # A fatal PCIe timeout: NVSentinel's default for an XID without an action.
    167: ("CONTACT_SUPPORT", HARDWARE_FAILURE.name),
    # Errors in the write-protected region (ECC off): "boot re-attempted with shifted WPR".
    168: ("RESTART_BM", REBOOT_REQUIRED.name),
    # Internal micro-controller halt, the newer drivers' form of XID 62 (RESET_GPU).
    169: ("COMPONENT_RESET", RESET_REQUIRED.name),
    # Uncorrectable DRAM / SRAM error: the details of an XID 48 (WORKFLOW_XID_48).
    171: ("COMPONENT_RESET", RESET_REQUIRED.name),
    172: ("COMPONENT_RESET", RESET_REQUIRED.name),
})

#: XIDs whose class is not their bucket's. 43 ("GPU stopped processing" after an application's software-induced
#: fault; "the GPU remains in a healthy state") is IGNORE in the catalog but an application fault by its trigger
#: conditions, and one of the application XIDs NVIDIA's device plugin skips.
XID_CLASS_OVERRIDES: Mapping[int, str] = MappingProxyType({43: APPLICATION.name})

#: DCGM's recommended action -> class, for a health failure the overrides below do not name.
RECOMMENDED_ACTION_CLASSES: Mapping[str, str] = MappingProxyType({
    "NONE": INFORMATIONAL.name,
    "COMPONENT_RESET": RESET_REQUIRED.name,
    "RESTART_VM": REBOOT_REQUIRED.name,
    "RESTART_BM": FALLEN_OFF_BUS.name,
    "CONTACT_SUPPORT": HARDWARE_FAILURE.name,
})

#: DCGM health failures whose class is more specific than their action's (the action stays NVIDIA's).
DCGM_CLASS_OVERRIDES: Mapping[str, str] = MappingProxyType({
    # Thermal limits and throttling: a cooling problem, observed and alerted on.
    **dict.fromkeys((
        "DCGM_FR_THERMAL_VIOLATIONS", "DCGM_FR_THERMAL_VIOLATIONS_TS", "DCGM_FR_TEMP_VIOLATION",
        "DCGM_FR_CLOCKS_EVENT_THERMAL", "DCGM_FR_CLOCK_THROTTLE_THERMAL", "GPU_TEMP_HW_SLOWDOWN_VIOLATION",
    ), THERMAL.name),
    # Link quality over threshold: a reset retrains the links.
    **dict.fromkeys((
        "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD", "DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD",
        "DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD",
    ), NVLINK.name),
    # The driver or NVML itself does not work.
    **dict.fromkeys((
        "DCGM_FR_NVML_API", "DCGM_FR_CANNOT_OPEN_LIB", "DCGM_FR_NVML_LIB_BAD", "DCGM_FR_DENYLISTED_DRIVER",
    ), DRIVER_FAILURE.name),
    # The driver's recovery action "node reboot": a reboot, not a GPU gone from the bus.
    "DCGM_FR_GPU_RECOVERY_REBOOT": REBOOT_REQUIRED.name,
})
