"""Simulated telemetry calls: clocks, temperature, power, utilisation and field values.

Values are drawn from the model's telemetry ranges by the node's deterministic generator; counters (energy,
NVLink traffic) only grow. Field ids a model or a fault lists as unsupported answer "not supported" in their
own slot of the field-values result, as NVML does. Field values are pynvml's own `c_nvmlFieldValue_t`, each in
the union member and with the type tag the driver uses, including the R545 branch's wrong memory-temperature tag.
The health fields (ECC, row remapping, NVLink CRC errors, thermal violation time, the GPU recovery action) and
the running processes read the faults injected at run time (:mod:`.injection`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pynvml

from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail
from gpu_operator.agents.nvml.simulated.injection import THERMAL_STEP_NS
from gpu_operator.agents.nvml.simulated.profile import (
    GpuModel,
)
from gpu_operator.agents.nvml.simulated.records import (
    UtilizationRecord,
)

__all__ = ["TelemetryCalls"]

_SAMPLING_PERIOD_US = 167_000
_ENERGY_START_MJ = (1_000_000, 900_000_000)


#: Field id -> (type tag, union member) as the driver answers them; fields not listed are unsigned long long.
_VALUE_TAGS: dict[int, tuple[int, str]] = {
    pynvml.NVML_FI_DEV_MEMORY_TEMP: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_REMAPPED_COR: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_REMAPPED_UNC: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_REMAPPED_PENDING: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_REMAPPED_FAILURE: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
    pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal"),
}
_DEFAULT_TAG = (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, "ullVal")
#: The driver branch whose NVML tags memory temperature wrongly (it writes uiVal, tags it double).
_R545 = "545."


class TelemetryCalls(SimulatedCore):
    """nvmlDeviceGet{ClockInfo,Temperature,PowerUsage,UtilizationRates,Encoder/DecoderUtilization,FieldValues}."""

    # -- telemetry ------------------------------------------------------------------------------------------

    def nvmlDeviceGetClockInfo(self, handle: Any, clock_type: int) -> int:
        index, _, model = self._gpu(handle, "nvmlDeviceGetClockInfo")
        bounds = {
            pynvml.NVML_CLOCK_SM: model.telemetry.sm_clock_mhz,
            pynvml.NVML_CLOCK_MEM: model.telemetry.memory_clock_mhz,
        }
        if clock_type not in bounds:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return self._telemetry.gauge(index, f"clock{clock_type}", bounds[clock_type])

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        index, _, model = self._gpu(handle, "nvmlDeviceGetTemperature")
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self._telemetry.gauge(index, "gpu_temp", model.telemetry.gpu_temp_c)

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        index, _, model = self._gpu(handle, "nvmlDeviceGetPowerUsage")
        return self._telemetry.gauge(index, "power", model.telemetry.power_milliwatts)

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> UtilizationRecord:
        index, _, model = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        return UtilizationRecord(
            gpu=self._telemetry.gauge(index, "gpu_util", model.telemetry.gpu_util_percent),
            memory=self._telemetry.gauge(index, "memory_util", model.telemetry.memory_util_percent),
        )

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[pynvml.c_nvmlProcessInfo_t]:
        index, gpu, _ = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses")
        unavailable = pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value
        running = [(p.pid, unavailable if p.used_memory_mib is None else p.used_memory_mib << 20)
                   for p in gpu.processes]
        running += [(pid, unavailable) for pid in sorted(self.injected(index).processes)]
        return [
            pynvml.c_nvmlProcessInfo_t(pid=pid, usedGpuMemory=memory, gpuInstanceId=0xFFFFFFFF,
                                       computeInstanceId=0xFFFFFFFF)
            for pid, memory in running
        ]

    def nvmlDeviceGetProcessUtilization(
        self, handle: Any, time_stamp: int
    ) -> list[pynvml.c_nvmlProcessUtilizationSample_t]:
        """One sample per process, stamped at the call; none newer than `time_stamp` is "not found", as NVML says."""
        _, gpu, _ = self._gpu(handle, "nvmlDeviceGetProcessUtilization")
        now = int(time.time() * 1_000_000)
        if not gpu.processes or now <= time_stamp:
            fail(pynvml.NVML_ERROR_NOT_FOUND)
        return [
            pynvml.c_nvmlProcessUtilizationSample_t(pid=p.pid, timeStamp=now, smUtil=p.sm_util_percent)
            for p in gpu.processes
        ]

    def nvmlDeviceGetEncoderUtilization(self, handle: Any) -> list[int]:
        index, _, model = self._gpu(handle, "nvmlDeviceGetEncoderUtilization")
        return [self._telemetry.gauge(index, "encoder_util", model.telemetry.encoder_util_percent), _SAMPLING_PERIOD_US]

    def nvmlDeviceGetDecoderUtilization(self, handle: Any) -> list[int]:
        index, _, model = self._gpu(handle, "nvmlDeviceGetDecoderUtilization")
        return [self._telemetry.gauge(index, "decoder_util", model.telemetry.decoder_util_percent), _SAMPLING_PERIOD_US]

    def _thermal_violation(self, index: int) -> int:
        faults = self.injected(index)
        if faults.thermal:
            faults.thermal_ns += THERMAL_STEP_NS
        return int(faults.thermal_ns)

    def _field(self, index: int, model: GpuModel, field_id: int) -> int | None:
        t = model.telemetry
        faults = self.injected(index)
        links = model.nvlinks > 0
        generators: dict[int, Callable[[], int]] = {
            pynvml.NVML_FI_DEV_MEMORY_TEMP: lambda: self._telemetry.gauge(index, "memory_temp", t.memory_temp_c),
            pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION: lambda: self._telemetry.counter(
                index, "energy", _ENERGY_START_MJ, t.power_milliwatts
            ),
            pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER: lambda: t.pcie_replay_count,
            pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL: lambda: 0,
            pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL: lambda: faults.dbe,
            pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL: lambda: 0,
            pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL: lambda: faults.dbe,
            pynvml.NVML_FI_DEV_REMAPPED_COR: lambda: 0,
            pynvml.NVML_FI_DEV_REMAPPED_UNC: lambda: 0,
            pynvml.NVML_FI_DEV_REMAPPED_PENDING: lambda: int(faults.remap_pending),
            pynvml.NVML_FI_DEV_REMAPPED_FAILURE: lambda: int(faults.remap_failed),
            pynvml.NVML_FI_DEV_PERF_POLICY_THERMAL: lambda: self._thermal_violation(index),
            pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: lambda: faults.recovery_action,
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: lambda: self._telemetry.counter(
                index, "nvlink_tx", (0, 0), t.nvlink_kib_per_second
            ),
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: lambda: self._telemetry.counter(
                index, "nvlink_rx", (0, 0), t.nvlink_kib_per_second
            ),
        }
        if links:
            generators[pynvml.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL] = lambda: faults.crc_errors
            generators[pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL] = lambda: 0
        generate = generators.get(field_id)
        return None if generate is None else generate()

    def _tag(self, field_id: int) -> tuple[int, str]:
        if field_id == pynvml.NVML_FI_DEV_MEMORY_TEMP and self.profile.driver.version.startswith(_R545):
            return pynvml.NVML_VALUE_TYPE_DOUBLE, "uiVal"
        return _VALUE_TAGS.get(field_id, _DEFAULT_TAG)

    def nvmlDeviceGetFieldValues(self, handle: Any, field_ids: Sequence[Any]) -> list[Any]:
        index, _, model = self._gpu(handle, "nvmlDeviceGetFieldValues")
        stamp = int(time.time() * 1_000_000)
        values = []
        for requested in field_ids:
            field_id, scope_id = requested if isinstance(requested, tuple) else (requested, 0)
            value = None if field_id in self._unsupported_fields[index] else self._field(index, model, field_id)
            record = pynvml.c_nvmlFieldValue_t()
            record.fieldId = field_id
            record.scopeId = scope_id
            record.timestamp = stamp
            record.latencyUsec = 0
            record.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED if value is None else pynvml.NVML_SUCCESS
            record.valueType, member = self._tag(field_id)
            setattr(record.value, member, value or 0)
            values.append(record)
        return values
