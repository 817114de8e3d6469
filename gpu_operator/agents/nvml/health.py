"""The health fields of a GPU: what DCGM's health watches read, in one NVML field-values call per GPU.

DCGM's health module (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp) judges a GPU from a few fields, each read
here through `nvmlDeviceGetFieldValues`, the NVML source DCGM's cache manager itself uses for them:

* volatile double-bit ECC errors, `NVML_FI_DEV_ECC_DBE_VOL_TOTAL` (`MonitorMemVolatileDbes`: any is a failure);
* row remapping pending and failed, `NVML_FI_DEV_REMAPPED_PENDING` / `_FAILURE` (`MonitorMem`);
* thermal violation time in ns, `NVML_FI_DEV_PERF_POLICY_THERMAL` (`MonitorThermal`: it moved in the window);
* NVLink CRC flit and data errors, `NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL` / `..._DATA_...`
  (`MonitorNVLink`: 100 or more a second fail);
* the GPU recovery action, `NVML_FI_DEV_GET_GPU_RECOVERY_ACTION` (`MonitorGpuRecoveryAction`: the driver's own
  verdict, XID 154's).

A field the GPU or driver does not have reads None (an older driver has no recovery action field); a lost GPU
raises `NvmlGpuLost`, as every per-GPU reading of the NVML layer does. The inventory (`Nvml.devices()`) gives the
NVLink states and whether a GPU is lost; this module only reads the counters the inventory does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pynvml

from gpu_operator.agents.nvml.errors import NvmlError, NvmlNotSupported, error_for_code
from gpu_operator.agents.nvml.fields import decode_field_value
from gpu_operator.agents.nvml.library import Handle
from gpu_operator.agents.nvml.reading import call

__all__ = ["HEALTH_FIELDS", "GpuHealth", "HealthReader"]

#: GpuHealth attribute -> NVML field id, in the order they are asked for.
HEALTH_FIELDS: dict[str, int] = {
    "ecc_dbe_volatile": pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL,
    "remapped_rows_pending": pynvml.NVML_FI_DEV_REMAPPED_PENDING,
    "remapped_rows_failure": pynvml.NVML_FI_DEV_REMAPPED_FAILURE,
    "thermal_violation_ns": pynvml.NVML_FI_DEV_PERF_POLICY_THERMAL,
    "nvlink_crc_flit_errors": pynvml.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
    "nvlink_crc_data_errors": pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
    "recovery_action": pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION,
}
_LOST = {pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_RESET_REQUIRED}


@dataclass(frozen=True, slots=True)
class GpuHealth:
    """One reading of a GPU's health fields; None where the GPU or driver lacks the field."""

    ecc_dbe_volatile: int | None = None
    remapped_rows_pending: int | None = None
    remapped_rows_failure: int | None = None
    thermal_violation_ns: int | None = None
    nvlink_crc_flit_errors: int | None = None
    nvlink_crc_data_errors: int | None = None
    recovery_action: int | None = None

    @property
    def nvlink_crc_errors(self) -> int | None:
        """Flit and data CRC errors together (DCGM checks each; a sum crosses the same rate no later)."""
        counts = [c for c in (self.nvlink_crc_flit_errors, self.nvlink_crc_data_errors) if c is not None]
        return sum(counts) if counts else None


def _decode(results: Any) -> GpuHealth:
    values: dict[str, int | None] = {}
    for attribute, result in zip(HEALTH_FIELDS, results, strict=True):
        code = int(result.nvmlReturn)
        if code in _LOST:
            raise error_for_code(code)
        values[attribute] = decode_field_value(result)
    return GpuHealth(**values)


class HealthReader:
    """Reads the health fields of GPUs by NVML index, with each device handle looked up once."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib
        self._handles: dict[int, Handle] = {}

    def read(self, index: int) -> GpuHealth:
        """The GPU's health fields. Raises `NvmlGpuLost` for a lost GPU, `NvmlError` when it cannot be asked."""
        lib = self._lib
        handle = self._handles.get(index)
        if handle is None:
            handle = self._handles[index] = call(lambda: lib.nvmlDeviceGetHandleByIndex(index))
        try:
            results = call(lambda: lib.nvmlDeviceGetFieldValues(handle, list(HEALTH_FIELDS.values())))
        except NvmlNotSupported:
            return GpuHealth()
        except NvmlError:
            self._handles.pop(index, None)
            raise
        return _decode(results)
