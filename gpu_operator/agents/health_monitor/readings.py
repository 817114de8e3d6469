"""Health readings to findings: DCGM's health checks, applied to what NVML reads on every pass.

Each pass reads the inventory (`Nvml.devices()`: which GPUs answer, their NVLink states, MIG mode) and the health
fields of every GPU (:mod:`gpu_operator.agents.nvml.health`), and judges them as DCGM's health watches do
(NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp):

* `GPULost`: NVML answers "GPU is lost" for the GPU; `GPUMissing`: an NVIDIA display or 3D controller on the PCI
  bus that NVML does not list (the GPU fell off before NVML started, or the driver did not take it). A lost GPU
  answers nothing, not even its UUID: it is named as it was last seen; one never seen (lost before the monitor
  started) takes, in NVML's index order, the PCI addresses no listed GPU has, in address order (NVML numbers
  GPUs in PCI bus order);
* `VolatileDBE`: any volatile double-bit ECC error (`MonitorMemVolatileDbes`: a count above 0 fails; the volatile
  count starts again at 0 after a GPU reset or a reboot);
* `RowRemapPending` / `RowRemapFailed`: a row remapping waits for a reset / failed (`MonitorMem`);
* `NVLinkDown`: a link NVML reports inactive, except while any GPU of the node is in MIG mode, when NVML reports
  links down (dcgmlib/src/DcgmTopology.cpp `UpdateNvLinkLinkStateFromNvml`'s workaround for NVIDIA bug
  200682374, which `MonitorNVLinkStatus` then skips);
* `NVLinkCRCErrors`: CRC flit and data errors at 100 or more a second between two passes
  (`MonitorNVLink`, `DCGM_LIMIT_MAX_NVLINK_CRC_ERROR` in DcgmGpuHardwareLimits.h);
* `ThermalViolation`: the thermal violation time moved within the last minute (`MonitorThermal`);
* `XID154`: NVML's GPU recovery action field says what the driver wants done (`MonitorGpuRecoveryAction`).

Every finding is a level: it holds while the reading does, and the monitor's caller decides when readings count at
all (not while the driver starts, :mod:`.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.health_monitor.findings import Finding, GpuRef, level_finding, recovery_finding
from gpu_operator.agents.nvml.health import GpuHealth
from gpu_operator.agents.nvml.inventory import GpuInfo
from gpu_operator.agents.nvml.pci import PciFunction
from gpu_operator.faults import health_fault

__all__ = ["GPU_PCI_CLASSES", "HealthAssessor", "Thresholds", "gpu_ref", "name_gpus"]

#: PCI classes of GPUs (VGA and 3D controllers); NVSwitches and bridges are not GPUs.
GPU_PCI_CLASSES = ("0x0300", "0x0302")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """DCGM's limits: NVLink CRC errors per second, and the window a thermal violation counts in."""

    nvlink_crc_per_second: float = 100.0
    thermal_window_seconds: float = 60.0


def gpu_ref(gpu: GpuInfo) -> GpuRef:
    return GpuRef(gpu.uuid, gpu.pci.sysfs_address if gpu.pci else None)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def name_gpus(gpus: Sequence[GpuInfo], known: Mapping[int, GpuRef],
              functions: Iterable[PciFunction]) -> tuple[dict[int, GpuRef], list[Finding]]:
    """Each GPU's name (a lost one's as last seen, else an unclaimed PCI address), and `GPUMissing` for each
    GPU-class NVIDIA PCI function no GPU claims."""
    names = {g.index: gpu_ref(g) if not g.lost else known.get(g.index, gpu_ref(g)) for g in gpus}
    claimed = {ref.pci for ref in names.values() if ref.pci}
    unclaimed = sorted(f.address.lower() for f in functions
                       if f.device_class.lower().startswith(GPU_PCI_CLASSES) and f.address.lower() not in claimed)
    for index in sorted(i for i, ref in names.items() if ref.pci is None):
        if not unclaimed:
            break
        names[index] = GpuRef(names[index].uuid, unclaimed.pop(0))
    fault = health_fault("GPUMissing")
    return names, [level_finding(fault, GpuRef(None, pci), "on the PCI bus, not listed by NVML") for pci in unclaimed]


class HealthAssessor:
    """Judges passes of readings; keeps what the rate and window checks need from the pass before."""

    def __init__(self, thresholds: Thresholds = Thresholds()) -> None:
        self._thresholds = thresholds
        self._last: dict[str, tuple[float, GpuHealth]] = {}
        self._thermal_moved: dict[str, float] = {}

    def forget(self, uuids: Iterable[str]) -> None:
        """Drop what was kept for these GPUs (their counters start again after a reset)."""
        for uuid in uuids:
            self._last.pop(uuid, None)
            self._thermal_moved.pop(uuid, None)

    def assess(self, gpus: Sequence[GpuInfo], health: Mapping[int, GpuHealth | None], now: float,
               names: Mapping[int, GpuRef] | None = None) -> list[Finding]:
        """The findings of one pass: `health` holds each GPU's fields by index (None: not readable this pass);
        `names` names GPUs NVML cannot name (:func:`name_gpus`)."""
        found: list[Finding] = []
        mig_anywhere = any(g.mig_enabled for g in gpus)
        for gpu in gpus:
            ref = (names or {}).get(gpu.index) or gpu_ref(gpu)
            if gpu.lost:
                found.append(level_finding(health_fault("GPULost"), ref, "NVML answers that the GPU is lost"))
                continue
            if not mig_anywhere:
                found += self._links(gpu, ref)
            reading = health.get(gpu.index)
            if reading is not None:
                found += self._fields(ref, reading, now)
        return found

    @staticmethod
    def _links(gpu: GpuInfo, ref: GpuRef) -> list[Finding]:
        down = [str(link) for link, up in enumerate(gpu.nvlinks) if not up]
        if not down:
            return []
        return [level_finding(health_fault("NVLinkDown"), ref, f"NVLink {', '.join(down)} inactive")]

    def _fields(self, ref: GpuRef, reading: GpuHealth, now: float) -> list[Finding]:
        found: list[Finding] = []
        if reading.ecc_dbe_volatile:
            observed = _plural(reading.ecc_dbe_volatile, "volatile double-bit ECC error")
            found.append(level_finding(health_fault("VolatileDBE"), ref, observed))
        if reading.remapped_rows_pending:
            found.append(level_finding(health_fault("RowRemapPending"), ref, "a row remapping waits for a GPU reset"))
        if reading.remapped_rows_failure:
            found.append(level_finding(health_fault("RowRemapFailed"), ref, "a row remapping failed"))
        if reading.recovery_action:
            found.append(recovery_finding(reading.recovery_action, ref))
        key = ref.uuid or ref.pci or ""
        previous = self._last.get(key)
        self._last[key] = (now, reading)
        if previous is not None:
            found += self._rates(ref, key, previous, reading, now)
        return found

    def _rates(self, ref: GpuRef, key: str, previous: tuple[float, GpuHealth], reading: GpuHealth,
               now: float) -> list[Finding]:
        found: list[Finding] = []
        then, before = previous
        elapsed = now - then
        errors, errors_before = reading.nvlink_crc_errors, before.nvlink_crc_errors
        if elapsed > 0 and errors is not None and errors_before is not None and errors >= errors_before:
            rate = (errors - errors_before) / elapsed
            limit = self._thresholds.nvlink_crc_per_second
            if rate >= limit:
                observed = f"{rate:.0f} NVLink CRC errors a second (limit {limit:g})"
                found.append(level_finding(health_fault("NVLinkCRCErrors"), ref, observed))
        violation, violation_before = reading.thermal_violation_ns, before.thermal_violation_ns
        if violation is not None and violation_before is not None and violation != violation_before:
            self._thermal_moved[key] = now
        moved = self._thermal_moved.get(key)
        window = self._thresholds.thermal_window_seconds
        if moved is not None and now - moved < window:
            observed = f"thermal violation time grew within the last {window:g} s"
            found.append(level_finding(health_fault("ThermalViolation"), ref, observed))
        return found
