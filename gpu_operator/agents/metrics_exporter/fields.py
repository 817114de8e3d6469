"""The DCGM fields this exporter can fill from NVML, and how each is computed.

Each row of :data:`FIELD_SOURCES` is one DCGM field: its id, whether DCGM stores it as an integer or a double,
and a function of an :class:`~.readings.EntityReading`. The values follow DCGM's own NVML-based sources
(reference agents.md §3.3, §3.6): power in watts from milliwatts, frame-buffer sizes floored to MiB, profiling
ratios as GPM percent ÷ 100, PCIe rates as GPM MiB/s × 2**20, temperatures above 200 °C treated as no reading.
A function returning None means "blank": the series is left out, as dcgm-exporter does.

:data:`LABEL_SOURCES` are the `label`-type fields: static strings from the inventory that become labels.
Fields in neither table (DCGM-only fields such as DCP metrics before Hopper) cannot be collected here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from gpu_operator.agents.metrics_exporter.readings import EntityReading
from gpu_operator.agents.nvml import GpuInfo, MemoryInfo, SystemInfo
from gpu_operator.agents.nvml import gpm as g

__all__ = [
    "FIELD_SOURCES",
    "LABEL_SOURCES",
    "MAX_TEMPERATURE_C",
    "FieldSource",
    "LabelSource",
    "Needs",
    "ValueKind",
]

Number = int | float

#: Temperatures above this are sensor errors, not readings.
MAX_TEMPERATURE_C = 200
_MIB = 1 << 20
_MILLIWATTS_PER_WATT = 1000.0
_PERCENT = 100.0


class ValueKind(Enum):
    """How DCGM stores the field; doubles are printed with six decimals before exposition, as DCGM does."""

    INT = "int64"
    DOUBLE = "double"


class Needs(Enum):
    """What a field needs besides the regular sampling pass."""

    SAMPLE = "sample"
    XID = "xid events"
    GPM = "gpm"
    LICENSE = "licensing"


@dataclass(frozen=True, slots=True)
class FieldSource:
    field_id: int
    kind: ValueKind
    read: Callable[[EntityReading], Number | None]
    needs: Needs = Needs.SAMPLE


@dataclass(frozen=True, slots=True)
class LabelSource:
    field_id: int
    read: Callable[[GpuInfo, SystemInfo], str | None]


def _sampled(attribute: str) -> Callable[[EntityReading], Number | None]:
    return lambda r: getattr(r.sample, attribute)


def _temperature(attribute: str) -> Callable[[EntityReading], Number | None]:
    def read(reading: EntityReading) -> Number | None:
        value = getattr(reading.sample, attribute)
        return None if value is None or value > MAX_TEMPERATURE_C else value

    return read


def _watts(reading: EntityReading) -> Number | None:
    milliwatts = reading.sample.power_usage_mw
    return None if milliwatts is None else milliwatts / _MILLIWATTS_PER_WATT


def _mib(attribute: str) -> Callable[[EntityReading], Number | None]:
    def read(reading: EntityReading) -> Number | None:
        memory: MemoryInfo | None = reading.memory
        value = None if memory is None else getattr(memory, attribute)
        return None if value is None else value // _MIB

    return read


def _ratio(metric: int) -> Callable[[EntityReading], Number | None]:
    def read(reading: EntityReading) -> Number | None:
        percent = reading.gpm.get(metric)
        return None if percent is None else percent / _PERCENT

    return read


def _bytes_per_second(metric: int) -> Callable[[EntityReading], Number | None]:
    def read(reading: EntityReading) -> Number | None:
        mib_per_second = reading.gpm.get(metric)
        return None if mib_per_second is None else int(mib_per_second * _MIB)

    return read


_INT, _DOUBLE = ValueKind.INT, ValueKind.DOUBLE

FIELD_SOURCES: dict[str, FieldSource] = {
    "DCGM_FI_DEV_SM_CLOCK": FieldSource(100, _INT, _sampled("sm_clock_mhz")),
    "DCGM_FI_DEV_MEM_CLOCK": FieldSource(101, _INT, _sampled("memory_clock_mhz")),
    "DCGM_FI_DEV_MEMORY_TEMP": FieldSource(140, _INT, _temperature("memory_temp_c")),
    "DCGM_FI_DEV_GPU_TEMP": FieldSource(150, _INT, _temperature("gpu_temp_c")),
    "DCGM_FI_DEV_POWER_USAGE": FieldSource(155, _DOUBLE, _watts),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": FieldSource(156, _INT, _sampled("total_energy_mj")),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": FieldSource(202, _INT, _sampled("pcie_replay_count")),
    "DCGM_FI_DEV_GPU_UTIL": FieldSource(203, _INT, _sampled("gpu_util_percent")),
    "DCGM_FI_DEV_MEM_COPY_UTIL": FieldSource(204, _INT, _sampled("memory_util_percent")),
    "DCGM_FI_DEV_ENC_UTIL": FieldSource(206, _INT, _sampled("encoder_util_percent")),
    "DCGM_FI_DEV_DEC_UTIL": FieldSource(207, _INT, _sampled("decoder_util_percent")),
    "DCGM_FI_DEV_XID_ERRORS": FieldSource(230, _INT, lambda r: r.xid, Needs.XID),
    "DCGM_FI_DEV_FB_FREE": FieldSource(251, _INT, _mib("free")),
    "DCGM_FI_DEV_FB_USED": FieldSource(252, _INT, _mib("used")),
    "DCGM_FI_DEV_FB_RESERVED": FieldSource(253, _INT, _mib("reserved")),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": FieldSource(310, _INT, _sampled("ecc_sbe_volatile")),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": FieldSource(311, _INT, _sampled("ecc_dbe_volatile")),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": FieldSource(312, _INT, _sampled("ecc_sbe_aggregate")),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": FieldSource(313, _INT, _sampled("ecc_dbe_aggregate")),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": FieldSource(393, _INT, _sampled("remapped_rows_uncorrectable")),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": FieldSource(394, _INT, _sampled("remapped_rows_correctable")),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": FieldSource(395, _INT, _sampled("remapped_rows_failure")),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": FieldSource(396, _INT, _sampled("remapped_rows_pending")),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": FieldSource(449, _INT, lambda r: r.nvlink_rate),
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": FieldSource(526, _INT, lambda r: r.license_status, Needs.LICENSE),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": FieldSource(1001, _DOUBLE, _ratio(g.GRAPHICS_UTIL), Needs.GPM),
    "DCGM_FI_PROF_SM_ACTIVE": FieldSource(1002, _DOUBLE, _ratio(g.SM_UTIL), Needs.GPM),
    "DCGM_FI_PROF_SM_OCCUPANCY": FieldSource(1003, _DOUBLE, _ratio(g.SM_OCCUPANCY), Needs.GPM),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": FieldSource(1004, _DOUBLE, _ratio(g.ANY_TENSOR_UTIL), Needs.GPM),
    "DCGM_FI_PROF_DRAM_ACTIVE": FieldSource(1005, _DOUBLE, _ratio(g.DRAM_BW_UTIL), Needs.GPM),
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE": FieldSource(1006, _DOUBLE, _ratio(g.FP64_UTIL), Needs.GPM),
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": FieldSource(1007, _DOUBLE, _ratio(g.FP32_UTIL), Needs.GPM),
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": FieldSource(1008, _DOUBLE, _ratio(g.FP16_UTIL), Needs.GPM),
    "DCGM_FI_PROF_PCIE_TX_BYTES": FieldSource(1009, _INT, _bytes_per_second(g.PCIE_TX_PER_SEC), Needs.GPM),
    "DCGM_FI_PROF_PCIE_RX_BYTES": FieldSource(1010, _INT, _bytes_per_second(g.PCIE_RX_PER_SEC), Needs.GPM),
}


def _cuda_version(system: SystemInfo) -> str | None:
    return None if system.cuda_driver_version is None else str(system.cuda_driver_version)


LABEL_SOURCES: dict[str, LabelSource] = {
    "DCGM_FI_DRIVER_VERSION": LabelSource(1, lambda gpu, system: system.driver_version),
    "DCGM_FI_NVML_VERSION": LabelSource(2, lambda gpu, system: system.nvml_version),
    "DCGM_FI_CUDA_DRIVER_VERSION": LabelSource(5, lambda gpu, system: _cuda_version(system)),
    "DCGM_FI_DEV_NAME": LabelSource(50, lambda gpu, system: gpu.name),
    "DCGM_FI_DEV_BRAND": LabelSource(51, lambda gpu, system: gpu.brand),
    "DCGM_FI_DEV_SERIAL": LabelSource(53, lambda gpu, system: gpu.serial),
    "DCGM_FI_DEV_UUID": LabelSource(54, lambda gpu, system: gpu.uuid),
    "DCGM_FI_DEV_MINOR_NUMBER": LabelSource(55, lambda gpu, system: _text(gpu.minor_number)),
    "DCGM_FI_DEV_PCI_BUSID": LabelSource(57, lambda gpu, system: None if gpu.pci is None else gpu.pci.bus_id),
    "DCGM_FI_DEV_VBIOS_VERSION": LabelSource(85, lambda gpu, system: gpu.vbios_version),
}


def _text(value: int | None) -> str | None:
    return None if value is None else str(value)
