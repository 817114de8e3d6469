"""The GPU fault catalog: every fault the operator can see (an XID, a DCGM or NVML health condition), its class,
the Node condition it sets and the default action ladder for it.

Pure data and functions on the ground floor: the device plugin, the alert rules, the health monitor and the
remediation read this one catalog. Its data (`catalog.yaml`) is generated from NVIDIA's XID catalog and DCGM
health mapping by `tools/generate_fault_catalog.py`.
"""

from gpu_operator.faults.buckets import RECOMMENDED_ACTIONS
from gpu_operator.faults.catalog import Catalog, DecodeRule, HealthEntry, XidEntry, catalog
from gpu_operator.faults.classes import (
    ACTIONS,
    FAULT_CLASSES,
    QUARANTINE_ACTIONS,
    Fault,
    FaultClass,
    fault_class,
)
from gpu_operator.faults.health import NVML_CONDITIONS, classify_health, health_conditions, health_fault
from gpu_operator.faults.nvlink5 import decode_nvlink5
from gpu_operator.faults.recovery import RECOVERY_ACTIONS, classify_recovery_action, recovery_action_fault
from gpu_operator.faults.xids import (
    CATALOG_XIDS,
    DEVICE_PLUGIN_SKIPPED_XIDS,
    XidLine,
    classify_xid,
    parse_xid_line,
    xid_entry,
    xid_fault,
    xids_of,
)

__all__ = [
    "ACTIONS",
    "CATALOG_XIDS",
    "DEVICE_PLUGIN_SKIPPED_XIDS",
    "FAULT_CLASSES",
    "NVML_CONDITIONS",
    "QUARANTINE_ACTIONS",
    "RECOMMENDED_ACTIONS",
    "RECOVERY_ACTIONS",
    "Catalog",
    "DecodeRule",
    "Fault",
    "FaultClass",
    "HealthEntry",
    "XidEntry",
    "XidLine",
    "catalog",
    "classify_health",
    "classify_recovery_action",
    "classify_xid",
    "decode_nvlink5",
    "fault_class",
    "health_conditions",
    "health_fault",
    "parse_xid_line",
    "recovery_action_fault",
    "xid_entry",
    "xid_fault",
    "xids_of",
]
