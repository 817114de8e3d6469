"""What `Allocate` hands the container runtime for the devices the kubelet picked.

The requested ids are checked (every one must be a device of the resource) and replicas are mapped back to
their physical devices (duplicates removed). Then each configured device list strategy adds its part:

* `envvar`: `NVIDIA_VISIBLE_DEVICES=<ids>` (UUIDs, or indices with the index id strategy), and
  `NVIDIA_IMEX_CHANNELS` when IMEX channels are configured;
* `volume-mounts`: `NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices` and one `/dev/null` mount per id
  under that directory (and per IMEX channel under its `imex/`);
* `cdi-annotations`: one annotation `<prefix>nvidia-device-plugin_<uuid4>` holding the CDI device names;
* `cdi-cri`: the same names as CRI `cdi_devices`.

CDI names use the plugin's vendor and class, `k8s.device-plugin.nvidia.com/gpu=<id>` (plus
`…/imex-channel=<id>`, and `…/gdrcopy=all`,
`…/gds=all`, `…/mofed=all` when those are enabled, whose env is always set). With `passDeviceSpecs` the device
nodes are passed as DeviceSpecs with host paths under the dev root, permissions `rw`: the control nodes that
exist (looked up where the container mounts the dev root), the GPU's `/dev/nvidia<minor>` and, for MIG devices,
the GI/CI access capabilities from `nvidia-caps/mig-minors` (keyed by the parent GPU's minor); not when every
strategy is a CDI one, since the CDI specs bring the nodes (NVIDIA returns before adding DeviceSpecs then). MPS
sharing adds `CUDA_MPS_PIPE_DIRECTORY` and mounts of the resource's pipe directory and the daemons' shm.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpu_operator.agents.device_plugin.devices import PluginDevice, Resource
from gpu_operator.agents.device_plugin.settings import IdStrategy, ListStrategy, Settings
from gpu_operator.agents.plugin_config import SharingStrategy

__all__ = [
    "AllocationError",
    "Mount",
    "DeviceSpec",
    "ContainerAllocation",
    "CDI_VENDOR",
    "CONTROL_NODES",
    "CONTAINER_DEVICES_DIR",
    "MPS_CONTAINER_ROOT",
    "allocate",
    "mig_minors",
]

CDI_VENDOR = "k8s.device-plugin.nvidia.com"
CONTAINER_DEVICES_DIR = "/var/run/nvidia-container-devices"
MPS_CONTAINER_ROOT = "/mps"
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
#: Enabled feature -> (env variable, CDI device class).
_FEATURES: dict[str, tuple[str, str]] = {
    "gdrcopy_enabled": ("NVIDIA_GDRCOPY", "gdrcopy"),
    "gds_enabled": ("NVIDIA_GDS", "gds"),
    "mofed_enabled": ("NVIDIA_MOFED", "mofed"),
}


class AllocationError(ValueError):
    """A request the plugin refuses; the message goes back to the kubelet (and into the pod's events)."""


@dataclass(frozen=True, slots=True)
class Mount:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    container_path: str
    host_path: str
    permissions: str = "rw"


@dataclass(slots=True)
class ContainerAllocation:
    """One container's answer (ContainerAllocateResponse)."""

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    devices: list[DeviceSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)


def mig_minors(proc_root: str) -> dict[str, int]:
    """`driver/nvidia-caps/mig-minors` as a map (`gpu0/gi7/access` -> 72); empty when the file is absent."""
    path = os.path.join(proc_root, "driver", "nvidia-caps", "mig-minors")
    try:
        with open(path, encoding="ascii") as lines:
            pairs = (line.split() for line in lines)
            return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}
    except OSError:
        return {}


def _physical(resource: Resource, ids: Sequence[str]) -> list[PluginDevice]:
    unknown = [i for i in ids if resource.device(i) is None]
    if unknown:
        raise AllocationError(f"invalid allocation request for {resource.name!r}: unknown device: {', '.join(unknown)}")
    if resource.fail_requests_greater_than_one and len(ids) > 1:
        raise AllocationError(
            f"invalid allocation request for {resource.name!r}: request for {len(ids)} devices too large: "
            "maximum request size for shared resources is 1"
        )
    seen: dict[str, PluginDevice] = {}
    for device_id in ids:
        device = resource.device(device_id)
        assert device is not None
        seen.setdefault(device.uuid, device)
    return list(seen.values())


def _device_specs(
    devices: Sequence[PluginDevice], settings: Settings, minors: Callable[[], dict[str, int]]
) -> list[DeviceSpec]:
    root, here = settings.device_root, settings.device_root_here
    specs = [DeviceSpec(p, posixpath.join(root, p.lstrip("/"))) for p in CONTROL_NODES
             if os.path.exists(posixpath.join(here, p.lstrip("/")))]
    caps: dict[str, int] | None = None
    for device in devices:
        paths = [] if device.minor is None else [f"/dev/nvidia{device.minor}"]
        if device.is_mig:
            caps = minors() if caps is None else caps
            # keyed by the parent's /dev/nvidia<minor> minor, not its NVML index (NVIDIA's nvmlMigDevice.GetPaths)
            gi = f"gpu{device.minor}/gi{device.gpu_instance_id}"
            for key in (f"{gi}/access", f"{gi}/ci{device.compute_instance_id}/access"):
                if key not in caps:
                    raise AllocationError(f"no capability device for MIG device {device.index} ({key} is not in "
                                          f"{settings.proc_root}/driver/nvidia-caps/mig-minors)")
                paths.append(f"/dev/nvidia-caps/nvidia-cap{caps[key]}")
        for path in paths:
            spec = DeviceSpec(path, posixpath.join(root, path.lstrip("/")))
            if spec not in specs:
                specs.append(spec)
    return specs


def _mps(resource: Resource, settings: Settings, answer: ContainerAllocation) -> None:
    pipe = posixpath.join(MPS_CONTAINER_ROOT, resource.name, "pipe")
    answer.envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe
    answer.mounts.append(Mount(pipe, posixpath.join(settings.mps_root, resource.name, "pipe")))
    answer.mounts.append(Mount("/dev/shm", posixpath.join(settings.mps_root, "shm")))


def allocate(
    resource: Resource,
    ids: Sequence[str],
    settings: Settings,
    *,
    minors: Callable[[], dict[str, int]] | None = None,
    annotation_id: Callable[[], str] = lambda: str(uuid.uuid4()),
) -> ContainerAllocation:
    """The answer for one container requesting `ids` of `resource`. Raises AllocationError."""
    devices = _physical(resource, ids)
    visible = [d.uuid if settings.device_id_strategy is IdStrategy.UUID else d.index for d in devices]
    answer = ContainerAllocation()
    strategies = settings.device_list_strategy
    channels = [str(c) for c in settings.imex_channel_ids]
    if ListStrategy.ENVVAR in strategies:
        answer.envs["NVIDIA_VISIBLE_DEVICES"] = ",".join(visible)
        if channels:
            answer.envs["NVIDIA_IMEX_CHANNELS"] = ",".join(channels)
    if ListStrategy.VOLUME_MOUNTS in strategies:
        answer.envs["NVIDIA_VISIBLE_DEVICES"] = CONTAINER_DEVICES_DIR
        answer.mounts += [Mount(posixpath.join(CONTAINER_DEVICES_DIR, v), "/dev/null") for v in visible]
        answer.mounts += [Mount(posixpath.join(CONTAINER_DEVICES_DIR, "imex", c), "/dev/null") for c in channels]
    features = [(env, cls) for name, (env, cls) in _FEATURES.items() if getattr(settings, name)]
    answer.envs.update({env: "enabled" for env, _ in features})
    names = [f"{CDI_VENDOR}/gpu={v}" for v in visible] + [f"{CDI_VENDOR}/imex-channel={c}" for c in channels]
    names += [f"{CDI_VENDOR}/{cls}=all" for _, cls in features]
    if ListStrategy.CDI_ANNOTATIONS in strategies:
        key = f"{settings.cdi_annotation_prefix}nvidia-device-plugin_{annotation_id()}"
        answer.annotations[key] = ",".join(names)
    if ListStrategy.CDI_CRI in strategies:
        answer.cdi_devices = names
    every_cdi = all(s in (ListStrategy.CDI_ANNOTATIONS, ListStrategy.CDI_CRI) for s in strategies)
    if settings.pass_device_specs and not every_cdi:
        answer.devices = _device_specs(devices, settings, minors or (lambda: mig_minors(settings.proc_root)))
    if resource.sharing is SharingStrategy.MPS:
        _mps(resource, settings, answer)
    return answer
