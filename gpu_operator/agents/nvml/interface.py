"""`Nvml`: what every agent gets from the NVML layer.

The questions, each answered in one call:

* `system()` - driver version, CUDA driver version, NVML version and GPU count;
* `devices()` - the inventory: every GPU with identity, memory, compute capability, MIG mode and MIG devices,
  fabric membership and NVLink state (re-read on every call, so MIG reconfigurations show up);
* `sample()` - every time-varying field of every GPU and MIG device in one cheap pass (a metrics scrape), with
  `processes=True` also each GPU's compute processes (memory and SM utilisation per pid);
* `wait_event(timeout_ms)` - the next XID or ECC event, or None when the wait times out;
* `watch_events()` - register for events now (`wait_event` does it on first use) and say which GPUs, by UUID,
  NVML would not watch and why (a GPU too old for events is not among them).

`pci` is the sysfs view of the same node (PCI class, NUMA node, config space). Implementations: the pynvml
adapter (real or simulated library underneath, :mod:`gpu_operator.agents.nvml.adapter`) and the empty node used
when NVML is missing and the agent was told not to fail (:mod:`gpu_operator.agents.nvml.empty`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from gpu_operator.agents.nvml.errors import NvmlError
from gpu_operator.agents.nvml.events import DeviceEvent
from gpu_operator.agents.nvml.inventory import GpuInfo, SystemInfo
from gpu_operator.agents.nvml.pci import PciBus
from gpu_operator.agents.nvml.telemetry import GpuSample

__all__ = ["Nvml"]


class Nvml(Protocol):
    """A node's GPUs as the agents see them. Raises `NvmlError` subclasses only for node-wide failures."""

    @property
    def pci(self) -> PciBus: ...

    def system(self) -> SystemInfo: ...

    def devices(self) -> tuple[GpuInfo, ...]: ...

    def sample(self, processes: bool = False) -> tuple[GpuSample, ...]: ...

    def wait_event(self, timeout_ms: int) -> DeviceEvent | None: ...

    def watch_events(self) -> Mapping[str, NvmlError]: ...

    def close(self) -> None: ...
