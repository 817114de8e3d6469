"""The GPU inventory as custom resources: one cluster-scoped `GpuDevice` per physical GPU.

Labels say what a node has in aggregate (`gpu.count`, `gpu.product`); a `GpuDevice`
(`gpu.pulumi-gpu-operator.io/v1alpha1`) says it per GPU, so `kubectl get gpudevices` lists every GPU of the
fleet with its node, index, product, memory and MIG mode. Each object is named `<node>-<uuid>` (the GPU UUID in
lower case, `gpu-…`), labelled with its node, and owned by its Node, so it goes away with the node.

* `spec` - what the GPU is: node, index, UUID, product name, PCI bus id, memory (MiB), compute capability;
* `status` - what state it is in: driver and CUDA driver versions, MIG mode (current and pending) with the MIG
  devices (profile, GPU/compute instance, memory, SMs), and whether the GPU stopped answering.

Every labelling pass reconciles the node's objects with NVML's inventory: missing ones are created, changed
ones replaced, and those of GPUs that are gone are deleted. The objects are built by pure functions; the
CustomResourceDefinition that describes them is rendered by `gpu_operator.render.gpu_device_crd`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpu_operator.agents.kube import NODES, AlreadyExists, KubeClient, KubeError, NotFound, Resource
from gpu_operator.agents.nvml import GpuInfo, MigDevice, SystemInfo

__all__ = [
    "GPU_DEVICES",
    "GROUP",
    "KIND",
    "NODE_LABEL",
    "VERSION",
    "GpuDevicePublisher",
    "gpu_device_name",
    "gpu_device_object",
    "gpu_device_objects",
    "node_owner",
]

_log = logging.getLogger(__name__)

GROUP = "gpu.pulumi-gpu-operator.io"
VERSION = "v1alpha1"
KIND = "GpuDevice"
GPU_DEVICES = Resource(GROUP, VERSION, "gpudevices", KIND, namespaced=False)
NODE_LABEL = f"{GROUP}/node"
_MAX_NAME = 253
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

Object = dict[str, Any]


def gpu_device_name(node: str, gpu: GpuInfo) -> str:
    """`<node>-<uuid>` in lower case (`<node>-gpu<index>` without a UUID), shortened with a hash past 253 chars."""
    suffix = gpu.uuid.lower() if gpu.uuid else f"gpu{gpu.index}"
    name = f"{node.lower()}-{suffix}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: _MAX_NAME - len(suffix) - 12].rstrip('-.')}-{digest}-{suffix}"


def _mig_mode(enabled: bool) -> str:
    return "enabled" if enabled else "disabled"


def _mig_device(device: MigDevice) -> Object:
    entry: Object = {
        "index": device.index,
        "gpuInstanceId": device.gpu_instance_id,
        "computeInstanceId": device.compute_instance_id,
    }
    if device.uuid:
        entry["uuid"] = device.uuid
    if device.profile:
        entry["profile"] = device.profile
    if device.attributes is not None:
        entry["memoryMiB"] = device.attributes.memory_mib
        entry["multiprocessors"] = device.attributes.multiprocessors
    return entry


def _mig(gpu: GpuInfo) -> Object:
    if gpu.mig_mode is None:
        return {"mode": "unsupported"}
    return {
        "mode": _mig_mode(gpu.mig_mode.current),
        "pendingMode": _mig_mode(gpu.mig_mode.pending),
        "devices": [_mig_device(device) for device in gpu.mig_devices],
    }


def _without_none(values: Mapping[str, Any]) -> Object:
    return {key: value for key, value in values.items() if value is not None}


def gpu_device_object(node: str, system: SystemInfo, gpu: GpuInfo, owners: Sequence[Mapping[str, Any]] = ()) -> Object:
    """The `GpuDevice` for one GPU of `node`."""
    labels = {NODE_LABEL: node} if len(node) <= 63 and _LABEL_VALUE.fullmatch(node) else {}
    metadata: Object = {"name": gpu_device_name(node, gpu), "labels": labels}
    if owners:
        metadata["ownerReferences"] = [dict(owner) for owner in owners]
    spec = _without_none(
        {
            "nodeName": node,
            "index": gpu.index,
            "uuid": gpu.uuid,
            "product": gpu.name,
            "pciBusId": gpu.pci.bus_id if gpu.pci else None,
            "memoryMiB": gpu.memory_total_mib,
            "computeCapability": str(gpu.compute_capability) if gpu.compute_capability else None,
        }
    )
    cuda = None if system.cuda_major is None else f"{system.cuda_major}.{system.cuda_minor}"
    status = _without_none(
        {"driverVersion": system.driver_version, "cudaDriverVersion": cuda, "lost": gpu.lost, "mig": _mig(gpu)}
    )
    return {"apiVersion": GPU_DEVICES.api_version, "kind": KIND, "metadata": metadata, "spec": spec, "status": status}


def gpu_device_objects(
    node: str, system: SystemInfo, gpus: Iterable[GpuInfo], owners: Sequence[Mapping[str, Any]] = ()
) -> list[Object]:
    return [gpu_device_object(node, system, gpu, owners) for gpu in gpus]


def node_owner(node: Mapping[str, Any]) -> Object:
    """An ownerReference to a Node (not a controller: the node does not manage its inventory)."""
    return {"apiVersion": "v1", "kind": "Node", "name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}


def _differs(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    metadata = current.get("metadata", {})
    labels = metadata.get("labels") or {}
    return (
        any(labels.get(key) != value for key, value in desired["metadata"]["labels"].items())
        or (metadata.get("ownerReferences") or []) != desired["metadata"].get("ownerReferences", [])
        or current.get("spec") != desired["spec"]
        or current.get("status") != desired["status"]
    )


class GpuDevicePublisher:
    """Keeps the `GpuDevice` objects of one node equal to its NVML inventory."""

    def __init__(self, client: KubeClient, node: str) -> None:
        self._client = client
        self._node = node
        self._owners: list[Object] | None = None

    def _node_owners(self) -> list[Object]:
        if self._owners is None:
            try:
                self._owners = [node_owner(self._client.get(NODES, self._node))]
            except KubeError as error:
                _log.warning("cannot read node %s for the GpuDevice owner: %s", self._node, error)
                return []
        return self._owners

    def _existing(self) -> dict[str, Object]:
        if _LABEL_VALUE.fullmatch(self._node) and len(self._node) <= 63:
            found = self._client.list(GPU_DEVICES, labels={NODE_LABEL: self._node})
        else:
            found = [o for o in self._client.list(GPU_DEVICES) if o.get("spec", {}).get("nodeName") == self._node]
        return {obj["metadata"]["name"]: obj for obj in found}

    def _write(self, desired: Object, current: Object | None) -> None:
        if current is None:
            try:
                self._client.create(GPU_DEVICES, desired)
                _log.info("created GpuDevice %s", desired["metadata"]["name"])
                return
            except AlreadyExists:
                current = self._client.get(GPU_DEVICES, desired["metadata"]["name"])
        if not _differs(current, desired):
            return
        body = {
            **desired,
            "metadata": {**desired["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        self._client.replace(GPU_DEVICES, body)
        _log.info("updated GpuDevice %s", desired["metadata"]["name"])

    def publish(self, system: SystemInfo, gpus: Iterable[GpuInfo]) -> None:
        """Create, replace and delete this node's objects to match `gpus`. Raises KubeError."""
        desired = {o["metadata"]["name"]: o for o in gpu_device_objects(self._node, system, gpus, self._node_owners())}
        existing = self._existing()
        for name, obj in desired.items():
            self._write(obj, existing.get(name))
        for name in sorted(existing.keys() - desired.keys()):
            try:
                self._client.delete(GPU_DEVICES, name)
                _log.info("deleted GpuDevice %s (its GPU is gone)", name)
            except NotFound:
                continue
