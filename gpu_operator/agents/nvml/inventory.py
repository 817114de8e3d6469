"""What a node's GPUs are: the inventory read once per discovery pass.

The inventory holds the facts that change only when the driver, the MIG layout or the hardware changes: driver
and CUDA versions, and per GPU its identity (index, UUID, name, PCI address), memory size, compute capability,
MIG mode and MIG devices, fabric (NVLink domain) membership and NVLink state. Every field that NVML may not
offer on a given GPU is optional; `None` means "not supported here" (or not readable), never a guess.

A GPU that stopped answering is still listed, with `lost=True` and whatever was read before it went away, so
that consumers can report it instead of silently counting one GPU less.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from gpu_operator.agents.nvml.pci import sysfs_address

__all__ = [
    "SystemInfo",
    "ComputeCapability",
    "PciInfo",
    "MemoryInfo",
    "MigMode",
    "MigAttributes",
    "MigDevice",
    "FabricState",
    "FabricInfo",
    "GpuInfo",
    "MIB",
]

#: Bytes in a MiB; NVML reports memory in bytes, labels and metrics in MiB (floored).
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class SystemInfo:
    """Node-wide driver facts. `cuda_driver_version` is NVML's integer form, e.g. 12080 for CUDA 12.8."""

    driver_version: str | None
    cuda_driver_version: int | None
    nvml_version: str | None
    device_count: int

    @property
    def cuda_major(self) -> int | None:
        return None if self.cuda_driver_version is None else self.cuda_driver_version // 1000

    @property
    def cuda_minor(self) -> int | None:
        return None if self.cuda_driver_version is None else (self.cuda_driver_version % 1000) // 10


@dataclass(frozen=True, slots=True)
class ComputeCapability:
    """The CUDA compute capability (SM version) of a GPU, e.g. 9.0 for Hopper."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True, slots=True)
class PciInfo:
    """Where the GPU sits on the PCI bus.

    `bus_id` is NVML's form with an 8-digit domain (`00000000:3B:00.0`); `device_id` is `0x<device><vendor>`
    (e.g. 0x233010DE). `device_class` (e.g. `0x030200`, a 3D controller) and `numa_node` come from the PCI
    function's sysfs entry, not from NVML.
    """

    bus_id: str
    device_id: int
    subsystem_id: int
    device_class: str | None = None
    numa_node: int | None = None

    @property
    def sysfs_address(self) -> str:
        """The address as sysfs names it: lower case, 4-digit domain (`0000:3b:00.0`)."""
        return sysfs_address(self.bus_id)


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    """Frame-buffer memory in bytes. With NVML's v2 query `used` excludes `reserved` (driver R510 and later)."""

    total: int
    used: int
    free: int
    reserved: int | None = None

    @property
    def total_mib(self) -> int:
        return self.total // MIB


@dataclass(frozen=True, slots=True)
class MigMode:
    """MIG mode: the one in force and the one that applies after the next GPU reset."""

    current: bool
    pending: bool


@dataclass(frozen=True, slots=True)
class MigAttributes:
    """What one MIG device has (nvmlDeviceGetAttributes): SMs, shared engines, slices and memory in MiB."""

    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpegs: int
    ofas: int
    gpu_instance_slices: int
    compute_instance_slices: int
    memory_mib: int


@dataclass(frozen=True, slots=True)
class MigDevice:
    """A MIG device: one compute instance inside one GPU instance of a MIG-enabled GPU.

    `profile` is the MIG profile in NVIDIA's notation (`1g.10gb`, `1c.2g.20gb`, `1g.10gb+me`), derived the way
    go-nvlib derives it; `None` when the GPU or compute instance profile could not be resolved.
    """

    index: int
    uuid: str | None
    parent_index: int
    parent_uuid: str | None
    gpu_instance_id: int
    compute_instance_id: int
    profile: str | None
    attributes: MigAttributes | None


class FabricState(IntEnum):
    """Where the GPU is in joining its NVLink fabric (nvmlGpuFabricState_t)."""

    NOT_SUPPORTED = 0
    NOT_STARTED = 1
    IN_PROGRESS = 2
    COMPLETED = 3


@dataclass(frozen=True, slots=True)
class FabricInfo:
    """NVLink fabric membership: the cluster UUID and clique id a GPU was given by the fabric manager."""

    cluster_uuid: str
    clique_id: int
    state: FabricState
    status: int

    @property
    def attached(self) -> bool:
        """Fabric-attached in go-nvlib's sense: registration completed, succeeded, with a non-zero cluster UUID."""
        return (
            self.state is FabricState.COMPLETED
            and self.status == 0
            and self.cluster_uuid != "00000000-0000-0000-0000-000000000000"
        )


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """One physical GPU as NVML describes it.

    `mig_mode` is `None` for GPUs that are not MIG-capable (NVML answers "not supported"). `nvlinks` holds the
    state (active or not) of each NVLink the GPU reports, in link order; it is empty for GPUs without NVLink.
    """

    index: int
    uuid: str | None
    name: str | None = None
    brand: str | None = None
    serial: str | None = None
    vbios_version: str | None = None
    pci: PciInfo | None = None
    minor_number: int | None = None
    memory: MemoryInfo | None = None
    compute_capability: ComputeCapability | None = None
    mig_mode: MigMode | None = None
    mig_devices: tuple[MigDevice, ...] = ()
    fabric: FabricInfo | None = None
    nvlinks: tuple[bool, ...] = ()
    lost: bool = False

    @property
    def mig_capable(self) -> bool:
        return self.mig_mode is not None

    @property
    def mig_enabled(self) -> bool:
        return self.mig_mode is not None and self.mig_mode.current

    @property
    def memory_total_mib(self) -> int | None:
        return None if self.memory is None else self.memory.total_mib
