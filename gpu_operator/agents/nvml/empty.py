"""The node with no usable NVML: what agents run on when told not to fail on an NVML init error.

NVIDIA's programs take `--fail-on-init-error=false` to mean "if NVML cannot start, carry on with no devices"
(GFD then publishes only its timestamp and vGPU labels). `EmptyNvml` is that: no GPUs, no samples, no events,
but still the node's PCI view, and the reason NVML was unavailable.
"""

from __future__ import annotations

import time

from gpu_operator.agents.nvml.errors import NvmlError
from gpu_operator.agents.nvml.events import DeviceEvent
from gpu_operator.agents.nvml.inventory import GpuInfo, SystemInfo
from gpu_operator.agents.nvml.pci import PciBus
from gpu_operator.agents.nvml.telemetry import GpuSample

__all__ = ["EmptyNvml"]


class EmptyNvml:
    """`Nvml` with zero GPUs. `reason` is the init error that led here."""

    def __init__(self, pci: PciBus, reason: NvmlError) -> None:
        self._pci = pci
        self.reason = reason

    @property
    def pci(self) -> PciBus:
        return self._pci

    def system(self) -> SystemInfo:
        return SystemInfo(driver_version=None, cuda_driver_version=None, nvml_version=None, device_count=0)

    def devices(self) -> tuple[GpuInfo, ...]:
        return ()

    def sample(self, processes: bool = False) -> tuple[GpuSample, ...]:
        return ()

    def wait_event(self, timeout_ms: int) -> DeviceEvent | None:
        time.sleep(timeout_ms / 1000)
        return None

    def watch_events(self) -> dict[str, NvmlError]:
        return {}

    def close(self) -> None:
        return None
