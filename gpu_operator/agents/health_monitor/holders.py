"""Which pods hold the faulty GPUs: what the remediation's partial drain needs and only the node can tell.

Which container holds which GPU is the kubelet's to know: the device plugin hands out GPU UUIDs (`nvidia.com/gpu`,
`<UUID>::<replica>` under time-slicing) and MIG device UUIDs (`nvidia.com/mig-*`), and the kubelet's
pod-resources `List` reports them per container (:mod:`gpu_operator.agents.kubelet.pod_resources`, as the
metrics exporter reads it for pod attribution). Nothing on the API server says it. So, where the remediation may
drain partially, the monitor reads that answer and writes, beside its conditions, the annotation
`nvidia.com/gpu-remediation.gpu-pods`: a JSON object with one key per faulty GPU (by UUID), listing the pods
(`<namespace>/<name>`) that hold it or one of its MIG devices, `[]` when none does. The controller drains those
pods (plus the pods holding the GPU through a DRA claim, which it reads from the API); a GPU missing from the
annotation (no kubelet to ask, not written yet) makes it drain every GPU pod of the node, never fewer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from gpu_operator.agents.kubelet.pod_resources import AllocatedDevices
from gpu_operator.agents.nvml.inventory import GpuInfo

__all__ = ["HOLDERS_ANNOTATION", "gpu_holders", "holders_annotation"]

HOLDERS_ANNOTATION = "nvidia.com/gpu-remediation.gpu-pods"
_GPU_RESOURCE = "nvidia.com/gpu"
_MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_REPLICA = "::"


def _parents(gpus: Sequence[GpuInfo]) -> dict[str, str]:
    """Every device ID a GPU may be handed out as (its UUID, its MIG devices' UUIDs) -> the GPU's UUID."""
    parents: dict[str, str] = {}
    for gpu in gpus:
        if not gpu.uuid:
            continue
        parents[gpu.uuid] = gpu.uuid
        for device in gpu.mig_devices:
            if device.uuid:
                parents[device.uuid] = gpu.uuid
    return parents


def gpu_holders(allocations: Iterable[AllocatedDevices], gpus: Sequence[GpuInfo]) -> dict[str, list[str]]:
    """GPU UUID -> the pods (`<namespace>/<name>`, sorted) holding it or one of its MIG devices."""
    parents = _parents(gpus)
    holders: dict[str, set[str]] = {}
    for allocation in allocations:
        if allocation.resource_name != _GPU_RESOURCE and not allocation.resource_name.startswith(
                _MIG_RESOURCE_PREFIX):
            continue
        for device_id in allocation.device_ids:
            parent = parents.get(device_id.split(_REPLICA)[0])
            if parent is not None:
                holders.setdefault(parent, set()).add(f"{allocation.namespace}/{allocation.pod}")
    return {uuid: sorted(pods) for uuid, pods in holders.items()}


def holders_annotation(holders: Mapping[str, list[str]], faulty: Iterable[str]) -> str | None:
    """The annotation's value for these faulty GPUs (None: no faulty GPU, the annotation goes)."""
    chosen = sorted(set(faulty))
    if not chosen:
        return None
    return json.dumps({uuid: list(holders.get(uuid, [])) for uuid in chosen}, separators=(",", ":"),
                      sort_keys=True)
