"""The NVML layer every agent shares: one interface over real or simulated GPUs.

`open_nvml("auto")` loads the driver's `libnvidia-ml.so.1` (searching the driver roots the operands mount) and
returns an :class:`Nvml`; `open_nvml("fake:h100-8x")` returns the same interface over a simulated node. The
interface gives the inventory (`devices()`), one-pass telemetry (`sample()`), XID/ECC events (`wait_event()`)
and the node's PCI view (`pci`). NVML failures surface as the exceptions in
:mod:`gpu_operator.agents.nvml.errors`: node-wide ones raise, per-GPU and per-field ones degrade.
"""

from gpu_operator.agents.nvml.errors import (
    NvmlDriverNotLoaded,
    NvmlError,
    NvmlGpuLost,
    NvmlLibraryNotFound,
    NvmlNotSupported,
    NvmlUnavailable,
)
from gpu_operator.agents.nvml.events import DeviceEvent, EventKind
from gpu_operator.agents.nvml.interface import Nvml
from gpu_operator.agents.nvml.inventory import (
    ComputeCapability,
    FabricInfo,
    FabricState,
    GpuInfo,
    MemoryInfo,
    MigAttributes,
    MigDevice,
    MigMode,
    PciInfo,
    SystemInfo,
)
from gpu_operator.agents.nvml.mig_profile import mig_profile_name, resource_profile_name
from gpu_operator.agents.nvml.pci import PciBus, PciFunction
from gpu_operator.agents.nvml.selection import (
    NVML_ENV,
    add_nvml_option,
    nvml_choice,
    open_nvml,
)
from gpu_operator.agents.nvml.telemetry import GpuSample, MigSample, ProcessSample

__all__ = [
    "Nvml",
    "open_nvml",
    "add_nvml_option",
    "nvml_choice",
    "NVML_ENV",
    "SystemInfo",
    "GpuInfo",
    "PciInfo",
    "MemoryInfo",
    "ComputeCapability",
    "MigMode",
    "MigDevice",
    "MigAttributes",
    "FabricInfo",
    "FabricState",
    "GpuSample",
    "MigSample",
    "ProcessSample",
    "DeviceEvent",
    "EventKind",
    "PciBus",
    "PciFunction",
    "mig_profile_name",
    "resource_profile_name",
    "NvmlError",
    "NvmlUnavailable",
    "NvmlLibraryNotFound",
    "NvmlDriverNotLoaded",
    "NvmlGpuLost",
    "NvmlNotSupported",
]
