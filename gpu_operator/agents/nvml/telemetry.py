"""What a node's GPUs are doing: one sample of every time-varying field, per GPU and per MIG device.

A sample is what a metrics exporter turns into one scrape: clocks, temperatures, power and energy, utilisation,
memory use, PCIe replays, ECC and row-remapping counters and NVLink traffic. Every field is optional; `None` is
a blank (not supported on this GPU, or not readable this time), which exporters skip rather than report as 0.
Counters (energy, ECC, replays, NVLink KiB) are cumulative as NVML reports them; rates are the consumer's job.
Per-process use (the compute processes' memory and their latest SM utilisation sample) is read only when asked
for, since it costs two more calls per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.agents.nvml.inventory import MemoryInfo

__all__ = ["GpuSample", "MigSample", "ProcessSample"]


@dataclass(frozen=True, slots=True)
class MigSample:
    """Frame-buffer use of one MIG device (the GPU instance's share of the memory)."""

    index: int
    uuid: str | None
    gpu_instance_id: int
    compute_instance_id: int
    memory: MemoryInfo | None = None


@dataclass(frozen=True, slots=True)
class ProcessSample:
    """One process using the GPU: its frame-buffer use and its SM utilisation in the driver's latest sample
    (None when NVML does not say)."""

    pid: int
    used_memory_bytes: int | None = None
    sm_util_percent: int | None = None


@dataclass(frozen=True, slots=True)
class GpuSample:
    """All time-varying fields of one GPU, read in one pass. Units are in the field names."""

    index: int
    uuid: str | None
    timestamp: float
    lost: bool = False
    memory: MemoryInfo | None = None
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    gpu_temp_c: int | None = None
    memory_temp_c: int | None = None
    power_usage_mw: int | None = None
    total_energy_mj: int | None = None
    gpu_util_percent: int | None = None
    memory_util_percent: int | None = None
    encoder_util_percent: int | None = None
    decoder_util_percent: int | None = None
    pcie_replay_count: int | None = None
    ecc_sbe_volatile: int | None = None
    ecc_dbe_volatile: int | None = None
    ecc_sbe_aggregate: int | None = None
    ecc_dbe_aggregate: int | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: int | None = None
    remapped_rows_failure: int | None = None
    nvlink_tx_kib: int | None = None
    nvlink_rx_kib: int | None = None
    mig: tuple[MigSample, ...] = ()
    processes: tuple[ProcessSample, ...] = ()
