"""Which pod uses which GPU: device IDs from the kubelet mapped to entity keys, as dcgm-exporter maps them.

The kubelet reports, per container, the device IDs the device plugins advertised. Only NVIDIA resources count:
`nvidia.com/gpu`, names given in `--nvidia-resource-names`, and every `nvidia.com/mig-*`. Each device ID is
filed under the entity keys it can stand for (see :mod:`.entities` for the metric side):

* `MIG-<uuid>` (optionally `::<replica>`): the MIG device's `<gpu>-<GI id>`, found in the inventory (the older
  `MIG-GPU-<uuid>/<gi>/<ci>` form too), and the ID without its `MIG-` prefix;
* GKE's `nvidia<gpu>/gi<gi>[/vgpu<n>]`: `<gpu>-<gi>`; GKE's `nvidia<gpu>/vgpu<n>`: `nvidia<gpu>`;
* `<uuid>::<replica>` (time-slicing or MPS replicas): `<uuid>`;
* and always the ID itself.

With one pod per device (the default) the last container listed wins; with `--kubernetes-virtual-gpus` every
container sharing a device is kept, each with the replica it holds (`vgpu` label).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.kubelet import AllocatedDevices
from gpu_operator.agents.nvml import GpuInfo

__all__ = [
    "GPU_RESOURCE",
    "MIG_RESOURCE_PREFIX",
    "PodRef",
    "device_keys",
    "is_nvidia_resource",
    "mig_keys",
    "pods_by_device",
    "pods_sharing_device",
    "shared_replica",
]

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_MIG_PREFIX = "MIG-"
_REPLICA_SEPARATOR = "::"
_GKE_VGPU_SEPARATOR = "/vgpu"
_GKE_MIG = re.compile(r"^nvidia([0-9]+)/gi([0-9]+)(/vgpu[0-9]+)?\Z")


@dataclass(frozen=True, slots=True)
class PodRef:
    """A container holding a device; `vgpu` is the replica it holds when devices are shared."""

    pod: str
    namespace: str
    container: str
    vgpu: str = ""


def is_nvidia_resource(resource_name: str, extra_names: Iterable[str] = ()) -> bool:
    return (
        resource_name == GPU_RESOURCE
        or resource_name in extra_names
        or resource_name.startswith(MIG_RESOURCE_PREFIX)
    )


def mig_keys(gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """MIG device UUID (both spellings) -> `<gpu>-<GI id>` of the GPU instance it belongs to."""
    keys: dict[str, str] = {}
    for gpu in gpus:
        for device in gpu.mig_devices:
            key = f"{gpu.index}-{device.gpu_instance_id}"
            if device.uuid:
                keys[device.uuid] = key
            if gpu.uuid:
                keys[f"{_MIG_PREFIX}{gpu.uuid}/{device.gpu_instance_id}/{device.compute_instance_id}"] = key
    return keys


def shared_replica(device_id: str) -> str:
    """The replica part of a shared device ID (`...::3` or GKE's `.../vgpu3`), or ''."""
    for separator in (_GKE_VGPU_SEPARATOR, _REPLICA_SEPARATOR):
        if separator in device_id:
            return device_id.split(separator)[1]
    return ""


def device_keys(device_id: str, by_mig_uuid: Mapping[str, str]) -> tuple[str, ...]:
    """Every entity key a device ID stands for, the ID itself last."""
    keys: list[str] = []
    gke_mig = _GKE_MIG.match(device_id)
    if device_id.startswith(_MIG_PREFIX):
        mig_uuid = device_id.split(_REPLICA_SEPARATOR)[0]
        instance = by_mig_uuid.get(mig_uuid)
        keys += ([] if instance is None else [instance]) + [mig_uuid[len(_MIG_PREFIX) :]]
    elif gke_mig is not None:
        keys.append(f"{gke_mig.group(1)}-{gke_mig.group(2)}")
    elif _GKE_VGPU_SEPARATOR in device_id:
        keys.append(device_id.split(_GKE_VGPU_SEPARATOR)[0])
    elif _REPLICA_SEPARATOR in device_id:
        keys.append(device_id.split(_REPLICA_SEPARATOR)[0])
    keys.append(device_id)
    return tuple(keys)


def _holdings(
    allocations: Iterable[AllocatedDevices], by_mig_uuid: Mapping[str, str], extra_names: Iterable[str]
) -> Iterable[tuple[str, PodRef]]:
    names = frozenset(extra_names)
    for allocation in allocations:
        if not is_nvidia_resource(allocation.resource_name, names):
            continue
        for device_id in allocation.device_ids:
            pod = PodRef(allocation.pod, allocation.namespace, allocation.container, shared_replica(device_id))
            for key in device_keys(device_id, by_mig_uuid):
                yield key, pod


def pods_by_device(
    allocations: Iterable[AllocatedDevices], by_mig_uuid: Mapping[str, str], extra_names: Iterable[str] = ()
) -> dict[str, PodRef]:
    """Entity key -> the (last listed) container holding it; replicas are not reported in this mode."""
    return {
        key: PodRef(pod.pod, pod.namespace, pod.container)
        for key, pod in _holdings(allocations, by_mig_uuid, extra_names)
    }


def pods_sharing_device(
    allocations: Iterable[AllocatedDevices], by_mig_uuid: Mapping[str, str], extra_names: Iterable[str] = ()
) -> dict[str, list[PodRef]]:
    """Entity key -> every container holding (a replica of) it, in the kubelet's order."""
    shared: dict[str, list[PodRef]] = {}
    for key, pod in _holdings(allocations, by_mig_uuid, extra_names):
        shared.setdefault(key, []).append(pod)
    return shared
