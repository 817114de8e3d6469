"""Health conditions read from DCGM or NVML, and their fault class.

DCGM's health watches and diagnostics report a failure code (`DCGM_FR_VOLATILE_DBE_DETECTED`, ...); NVIDIA's
mapping (NVSentinel's gpu-health-monitor `dcgmerrorsmapping.csv`) gives each its recommended action, and the
catalog its class (:mod:`gpu_operator.faults.buckets` says where the class is more specific than the action).

The health monitor reads NVML rather than DCGM. Each NVML reading it turns into a condition has a name here, the
Node condition reason it writes, and takes NVIDIA's verdict from the DCGM failure that reports the same thing:

| reading | what NVML shows | DCGM twin |
|---|---|---|
| `VolatileDBE` | the volatile uncorrectable ECC count grew, or a double-bit ECC event | DCGM_FR_VOLATILE_DBE_DETECTED |
| `RowRemapPending` | `nvmlDeviceGetRemappedRows` pending | DCGM_FR_PENDING_ROW_REMAP |
| `RowRemapFailed` | `nvmlDeviceGetRemappedRows` failure occurred | DCGM_FR_ROW_REMAP_FAILURE |
| `NVLinkDown` | an NVLink the GPU has is not active | DCGM_FR_NVLINK_DOWN |
| `NVLinkCRCErrors` | NVLink CRC error counters past the threshold | DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD |
| `FallenOffBus`, `GPULost` | NVML_ERROR_GPU_IS_LOST | DCGM_FR_FALLEN_OFF_BUS |
| `GPUMissing` | fewer GPUs than the node had at boot | DCGM_FR_FALLEN_OFF_BUS |
| `ThermalViolation` | thermal slowdown or violation time growing | DCGM_FR_THERMAL_VIOLATIONS |
| `DriverNotLoaded` | the NVML library cannot be loaded | DCGM_FR_CANNOT_OPEN_LIB |
| `NVMLInitFailed` | `nvmlInit` fails after the operands were ready | DCGM_FR_NVML_API |
| `ValidatorFailed` | the operator validator's checks fail | none: driver-failure, CONTACT_SUPPORT |

A DCGM failure code newer than the mapping gets NVSentinel's default for an unknown code, CONTACT_SUPPORT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpu_operator.faults.catalog import catalog
from gpu_operator.faults.classes import DRIVER_FAILURE, FAULT_CLASSES, HARDWARE_FAILURE, Fault, FaultClass

__all__ = ["NVML_CONDITIONS", "NvmlCondition", "classify_health", "health_conditions", "health_fault"]

_DCGM_PREFIX = "DCGM_FR_"


@dataclass(frozen=True, slots=True)
class NvmlCondition:
    """An NVML health reading: its name (the condition reason), its DCGM twin, or its own verdict without one."""

    name: str
    dcgm: str | None
    action: str = "CONTACT_SUPPORT"
    fault_class: str = HARDWARE_FAILURE.name


NVML_CONDITIONS: Mapping[str, NvmlCondition] = MappingProxyType({c.name: c for c in (
    NvmlCondition("VolatileDBE", "DCGM_FR_VOLATILE_DBE_DETECTED"),
    NvmlCondition("RowRemapPending", "DCGM_FR_PENDING_ROW_REMAP"),
    NvmlCondition("RowRemapFailed", "DCGM_FR_ROW_REMAP_FAILURE"),
    NvmlCondition("NVLinkDown", "DCGM_FR_NVLINK_DOWN"),
    NvmlCondition("NVLinkCRCErrors", "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD"),
    NvmlCondition("FallenOffBus", "DCGM_FR_FALLEN_OFF_BUS"),
    NvmlCondition("GPULost", "DCGM_FR_FALLEN_OFF_BUS"),
    NvmlCondition("GPUMissing", "DCGM_FR_FALLEN_OFF_BUS"),
    NvmlCondition("ThermalViolation", "DCGM_FR_THERMAL_VIOLATIONS"),
    NvmlCondition("DriverNotLoaded", "DCGM_FR_CANNOT_OPEN_LIB"),
    NvmlCondition("NVMLInitFailed", "DCGM_FR_NVML_API"),
    NvmlCondition("ValidatorFailed", None, fault_class=DRIVER_FAILURE.name),
)})


def health_conditions() -> tuple[str, ...]:
    """Every condition name :func:`health_fault` knows: the NVML readings, then NVIDIA's DCGM failures."""
    return (*NVML_CONDITIONS, *catalog().dcgm_health)


def health_fault(condition: str) -> Fault:
    """The verdict for a DCGM failure code or an NVML reading; a ValueError for a name that is neither."""
    nvml = NVML_CONDITIONS.get(condition)
    if nvml is not None and nvml.dcgm is None:
        return Fault(FAULT_CLASSES[nvml.fault_class], nvml.action, nvml.name, None, f"{nvml.name} (NVML)")
    failure = nvml.dcgm if nvml is not None else condition
    entry = catalog().dcgm_health.get(failure or "")
    if entry is not None:
        detail = f"{condition} ({entry.failure}: {entry.action})" if nvml else f"{entry.failure}: {entry.action}"
        return Fault(FAULT_CLASSES[entry.fault_class], entry.action, condition, entry.failure, detail)
    if condition.startswith(_DCGM_PREFIX):
        return Fault(HARDWARE_FAILURE, "CONTACT_SUPPORT", condition, None,
                     f"{condition}: a DCGM failure NVIDIA's mapping does not list")
    raise ValueError(f"unknown health condition {condition!r}: use a DCGM_FR_* failure code or one of "
                     f"{', '.join(NVML_CONDITIONS)}")


def classify_health(condition: str) -> FaultClass:
    """The fault class of a DCGM failure code or an NVML reading (see :func:`health_fault`)."""
    return health_fault(condition).fault_class
