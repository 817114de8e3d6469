"""The sampled fields: which NVML call (or NVML field id) fills which attribute of a `GpuSample`.

Two kinds of reading make up one pass over a GPU:

* direct calls, one per table row (clocks, temperature, power, utilisation, encoder/decoder utilisation);
* one `nvmlDeviceGetFieldValues` call for all field ids in `FIELD_VALUES` (memory temperature, energy, PCIe
  replays, ECC totals, remapped rows, NVLink traffic), each value with its own return code - this is where
  most per-field "not supported" answers come from, at the cost of a single call.

These are the NVML sources DCGM itself uses for the dcgm-exporter default counters (reference agents.md §3.3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pynvml

from gpu_operator.agents.nvml.errors import NvmlNotSupported
from gpu_operator.agents.nvml.inventory import MemoryInfo
from gpu_operator.agents.nvml.library import Handle, NvmlLibrary
from gpu_operator.agents.nvml.reading import call

__all__ = [
    "DirectReading",
    "FieldValue",
    "DIRECT_READINGS",
    "FIELD_VALUES",
    "ALL_LINKS",
    "decode_field_value",
    "read_memory",
]

#: scopeId that makes NVML sum an NVLink counter over all links.
ALL_LINKS = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class DirectReading:
    """One NVML call and the sample attributes it fills."""

    name: str
    read: Callable[[NvmlLibrary, Handle], dict[str, int]]


@dataclass(frozen=True, slots=True)
class FieldValue:
    """One NVML field id (with an optional scope such as a link number) and the sample attribute it fills.

    `member` names the value union member to read whatever `valueType` says, for fields whose type tag some
    drivers get wrong; None decodes by the tag.
    """

    attribute: str
    field_id: int
    scope_id: int | None = None
    member: str | None = None

    @property
    def argument(self) -> int | tuple[int, int]:
        """How pynvml's nvmlDeviceGetFieldValues takes it: an id, or an (id, scope) pair."""
        return self.field_id if self.scope_id is None else (self.field_id, self.scope_id)


def _utilisation(lib: NvmlLibrary, handle: Handle) -> dict[str, int]:
    rates = lib.nvmlDeviceGetUtilizationRates(handle)
    return {"gpu_util_percent": int(rates.gpu), "memory_util_percent": int(rates.memory)}


DIRECT_READINGS: tuple[DirectReading, ...] = (
    DirectReading("sm_clock", lambda lib, h: {"sm_clock_mhz": lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)}),
    DirectReading(
        "memory_clock", lambda lib, h: {"memory_clock_mhz": lib.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)}
    ),
    DirectReading(
        "gpu_temperature",
        lambda lib, h: {"gpu_temp_c": lib.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)},
    ),
    DirectReading("power_usage", lambda lib, h: {"power_usage_mw": lib.nvmlDeviceGetPowerUsage(h)}),
    DirectReading("utilization", _utilisation),
    DirectReading(
        "encoder_utilization", lambda lib, h: {"encoder_util_percent": lib.nvmlDeviceGetEncoderUtilization(h)[0]}
    ),
    DirectReading(
        "decoder_utilization", lambda lib, h: {"decoder_util_percent": lib.nvmlDeviceGetDecoderUtilization(h)[0]}
    ),
)

FIELD_VALUES: tuple[FieldValue, ...] = (
    # The R545 drivers tag memory temperature with a type other than the unsigned int they write; DCGM reads
    # uiVal for this field on every driver, and so do we (decoding by the tag gave 0 degrees there).
    FieldValue("memory_temp_c", pynvml.NVML_FI_DEV_MEMORY_TEMP, member="uiVal"),
    FieldValue("total_energy_mj", pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION),
    FieldValue("pcie_replay_count", pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER),
    FieldValue("ecc_sbe_volatile", pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL),
    FieldValue("ecc_dbe_volatile", pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL),
    FieldValue("ecc_sbe_aggregate", pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL),
    FieldValue("ecc_dbe_aggregate", pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL),
    FieldValue("remapped_rows_correctable", pynvml.NVML_FI_DEV_REMAPPED_COR),
    FieldValue("remapped_rows_uncorrectable", pynvml.NVML_FI_DEV_REMAPPED_UNC),
    FieldValue("remapped_rows_pending", pynvml.NVML_FI_DEV_REMAPPED_PENDING),
    FieldValue("remapped_rows_failure", pynvml.NVML_FI_DEV_REMAPPED_FAILURE),
    FieldValue("nvlink_tx_kib", pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ALL_LINKS),
    FieldValue("nvlink_rx_kib", pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ALL_LINKS),
)

#: nvmlValueType_t -> the member of the value union that holds it.
_VALUE_MEMBER: dict[int, str] = {
    pynvml.NVML_VALUE_TYPE_DOUBLE: "dVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
    pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
    pynvml.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_SHORT: "usVal",
}


def decode_field_value(value: Any, member: str | None = None) -> int | None:
    """The number in one returned field value (None when its own return code is not success).

    `member` overrides the union member the value's type tag selects (see `FieldValue.member`).
    """
    if int(value.nvmlReturn) != pynvml.NVML_SUCCESS:
        return None
    if member is None:
        member = _VALUE_MEMBER.get(int(value.valueType))
    if member is None:
        return None
    return int(getattr(value.value, member))


def read_memory(lib: NvmlLibrary, handle: Handle) -> MemoryInfo:
    """Memory use with reserved memory split out (v2); falls back to v1 on drivers older than R510."""
    try:
        info = call(lambda: lib.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2))
        return MemoryInfo(int(info.total), int(info.used), int(info.free), int(info.reserved))
    except NvmlNotSupported:
        legacy = call(lambda: lib.nvmlDeviceGetMemoryInfo(handle))
        return MemoryInfo(int(legacy.total), int(legacy.used), int(legacy.free), None)
