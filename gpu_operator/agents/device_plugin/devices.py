"""What the plugin advertises: resources and their devices, from the node's GPUs and the settings.

A *resource* is one name the kubelet schedules (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`,
`nvidia.com/gpu.shared`) and gets its own plugin server. Its *devices* are what `ListAndWatch` lists:

* full GPUs, ID = GPU UUID, index `"<nvml index>"`;
* MIG devices (strategies single and mixed), ID = MIG UUID, index `"<gpu>:<mig>"`;
* replicas of either under time-slicing or MPS, ID = `<UUID>::<n>` (n from 0), all replicas of one device
  sharing its physical identity; the resource is `<name>.shared` with `renameByDefault`.

MIG strategies: **none** advertises every GPU whole, MIG or not; **single** advertises every MIG device as
`nvidia.com/gpu` and refuses layouts it cannot express as one resource (an enabled GPU without MIG devices,
MIG and non-MIG GPUs together, differing profiles); **mixed** advertises `nvidia.com/mig-<profile>` per profile
whose compute instance fills its GPU instance, plus `nvidia.com/gpu` for the non-MIG GPUs, and refuses the node
when a MIG device's compute instance is smaller than its GPU instance (`1c.2g.20gb`): NVIDIA's plugin has a
resource only for the profiles whose compute and GPU instances are the same size, so it stops on such a device.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gpu_operator.agents.device_plugin.settings import MigStrategy, Settings
from gpu_operator.agents.nvml import GpuInfo, MigDevice, resource_profile_name
from gpu_operator.agents.plugin_config import RESOURCE_PREFIX, ReplicatedResource, SharingStrategy

__all__ = [
    "GPU_RESOURCE",
    "REPLICA_SEPARATOR",
    "MAX_DEVICE_ID",
    "DeviceError",
    "PluginDevice",
    "Resource",
    "build_resources",
    "physical_id",
]

_log = logging.getLogger(__name__)

GPU_RESOURCE = RESOURCE_PREFIX + "gpu"
REPLICA_SEPARATOR = "::"
#: The kubelet refuses longer device ids.
MAX_DEVICE_ID = 63


class DeviceError(ValueError):
    """The node's GPUs cannot be advertised as the settings ask (a MIG layout the strategy refuses, ...)."""


@dataclass(frozen=True, slots=True)
class PluginDevice:
    """One advertised device. `uuid` is the physical identity (GPU or MIG UUID) shared by all its replicas.

    `pci_bus_id` is the (parent) GPU's, as NVML writes it, and `mig_profile` a MIG device's profile: the CDI spec
    finds DRM nodes by them.
    """

    id: str
    uuid: str
    index: str
    gpu_index: int
    gpu_uuid: str
    minor: int | None
    numa_node: int | None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
    replica: int | None = None
    pci_bus_id: str | None = None
    mig_profile: str | None = None

    @property
    def is_mig(self) -> bool:
        return self.gpu_instance_id is not None


@dataclass(frozen=True, slots=True)
class Resource:
    """One advertised resource: its fully qualified name, its devices and how they are shared."""

    name: str
    devices: tuple[PluginDevice, ...]
    sharing: SharingStrategy = SharingStrategy.NONE
    replicas: int = 1
    fail_requests_greater_than_one: bool = False
    _by_id: dict[str, PluginDevice] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.id: d for d in self.devices})

    @property
    def short_name(self) -> str:
        """The name without `nvidia.com/`: the plugin's socket is `nvidia-<short name>.sock`."""
        return self.name.removeprefix(RESOURCE_PREFIX)

    @property
    def socket_name(self) -> str:
        return f"nvidia-{self.short_name}.sock"

    def device(self, device_id: str) -> PluginDevice | None:
        return self._by_id.get(device_id)


def physical_id(device_id: str) -> str:
    """A replica id without its `::<n>` suffix."""
    return device_id.split(REPLICA_SEPARATOR, 1)[0]


def _gpu_device(gpu: GpuInfo) -> PluginDevice:
    if gpu.uuid is None:
        raise DeviceError(f"GPU {gpu.index} has no readable UUID; it cannot be advertised")
    numa = None if gpu.pci is None else gpu.pci.numa_node
    return PluginDevice(gpu.uuid, gpu.uuid, str(gpu.index), gpu.index, gpu.uuid, gpu.minor_number, numa,
                        pci_bus_id=None if gpu.pci is None else gpu.pci.bus_id)


def _mig_device(gpu: GpuInfo, mig: MigDevice) -> PluginDevice:
    if mig.uuid is None or gpu.uuid is None:
        raise DeviceError(f"MIG device {gpu.index}:{mig.index} has no readable UUID; it cannot be advertised")
    numa = None if gpu.pci is None else gpu.pci.numa_node
    return PluginDevice(
        mig.uuid, mig.uuid, f"{gpu.index}:{mig.index}", gpu.index, gpu.uuid, gpu.minor_number, numa,
        gpu_instance_id=mig.gpu_instance_id, compute_instance_id=mig.compute_instance_id,
        pci_bus_id=None if gpu.pci is None else gpu.pci.bus_id, mig_profile=mig.profile,
    )


def _single(gpus: Sequence[GpuInfo]) -> dict[str, list[PluginDevice]]:
    enabled = [g for g in gpus if g.mig_enabled]
    if not enabled:
        return {GPU_RESOURCE: [_gpu_device(g) for g in gpus]}
    if len(enabled) != len(gpus):
        plain = ", ".join(str(g.index) for g in gpus if not g.mig_enabled)
        raise DeviceError(f"migStrategy single: GPUs {plain} have MIG disabled beside MIG-enabled GPUs; "
                          "enable MIG on all GPUs or use migStrategy mixed")
    empty = [str(g.index) for g in enabled if not g.mig_devices]
    if empty:
        raise DeviceError(f"migStrategy single: MIG-enabled GPUs {', '.join(empty)} have no MIG devices; "
                          "create MIG devices (mig-manager) or disable MIG")
    profiles = sorted({m.profile or "unknown" for g in enabled for m in g.mig_devices})
    if len(profiles) > 1:
        raise DeviceError(f"migStrategy single: MIG devices of differing profiles ({', '.join(profiles)}); "
                          "use one profile on every GPU or migStrategy mixed")
    return {GPU_RESOURCE: [_mig_device(g, m) for g in enabled for m in g.mig_devices]}


def _gpu_instance_profile(profile: str) -> str | None:
    """For a compute instance smaller than its GPU instance (`1c.2g.20gb`), the GPU instance's profile; else None."""
    base, plus, suffix = profile.partition("+")
    compute, dot, rest = base.partition(".")
    if not (dot and compute.endswith("c") and compute[:-1].isdigit()):
        return None
    return rest + plus + suffix


def _mixed(gpus: Sequence[GpuInfo]) -> dict[str, list[PluginDevice]]:
    resources: dict[str, list[PluginDevice]] = {}
    for gpu in gpus:
        if not gpu.mig_enabled:
            resources.setdefault(GPU_RESOURCE, []).append(_gpu_device(gpu))
            continue
        for mig in gpu.mig_devices:
            if mig.profile is None:
                raise DeviceError(f"migStrategy mixed: the profile of MIG device {gpu.index}:{mig.index} "
                                  "could not be read from NVML")
            whole = _gpu_instance_profile(mig.profile)
            if whole is not None:
                raise DeviceError(
                    f"migStrategy mixed: MIG device {gpu.index}:{mig.index} has profile {mig.profile}, whose compute "
                    f"instance is smaller than its GPU instance, and no nvidia.com/mig-* resource matches it; give "
                    f"each GPU instance one compute instance that fills it (profile {whole}) or use migStrategy "
                    "single or none")
            name = f"{RESOURCE_PREFIX}mig-{resource_profile_name(mig.profile)}"
            resources.setdefault(name, []).append(_mig_device(gpu, mig))
    return resources


def _replicated(name: str, devices: list[PluginDevice], settings: Settings) -> Resource:
    sharing = settings.plugin_config.sharing
    replication: ReplicatedResource | None = sharing.replication_of(name)
    strategy = sharing.strategy
    if replication is None or strategy is SharingStrategy.NONE:
        return Resource(name, tuple(devices))
    block = sharing.replicated
    assert block is not None
    if strategy is SharingStrategy.MPS and any(d.is_mig for d in devices):
        raise DeviceError(f"sharing.mps: {name} is made of MIG devices, which MPS sharing does not support")
    replicas = [
        replace(d, id=f"{d.id}{REPLICA_SEPARATOR}{n}", replica=n)
        for d in devices
        for n in range(replication.replicas)
    ]
    too_long = next((r.id for r in replicas if len(r.id) > MAX_DEVICE_ID), None)
    if too_long is not None:
        raise DeviceError(f"device id {too_long!r} is longer than the kubelet's {MAX_DEVICE_ID} characters")
    return Resource(
        replication.rename or name, tuple(replicas), strategy, replication.replicas,
        block.fail_requests_greater_than_one,
    )


def _check_imex(settings: Settings) -> None:
    for channel in settings.imex_channel_ids if settings.imex_required else ():
        node = os.path.join(settings.device_root_here, "dev", "nvidia-caps-imex-channels", f"channel{channel}")
        if not os.path.exists(node):
            raise DeviceError(f"IMEX channel {channel} is required (IMEX_REQUIRED) but {node} does not exist; "
                              "create the channel on the node or drop IMEX_REQUIRED")


def build_resources(gpus: Sequence[GpuInfo], settings: Settings) -> tuple[Resource, ...]:
    """Every resource to advertise, in name order. Raises DeviceError for what the strategy refuses."""
    _check_imex(settings)
    strategy = settings.mig_strategy
    if strategy is MigStrategy.SINGLE:
        grouped = _single(gpus)
    elif strategy is MigStrategy.MIXED:
        grouped = _mixed(gpus)
    else:
        grouped = {GPU_RESOURCE: [_gpu_device(g) for g in gpus]} if gpus else {}
    resources = [_replicated(name, devices, settings) for name, devices in grouped.items() if devices]
    return tuple(sorted(resources, key=lambda r: r.name))
