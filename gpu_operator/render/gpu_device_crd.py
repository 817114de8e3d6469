"""The `GpuDevice` CustomResourceDefinition: one cluster-scoped object per physical GPU of the fleet.

Our feature-discovery agent (with `--publish-gpu-devices`) keeps one `GpuDevice`
(`gpu.pulumi-gpu-operator.io/v1alpha1`) per GPU of its node, named `<node>-<gpu uuid>` and owned by the Node.
`spec` is what the GPU is (node, index, UUID, product, PCI bus id, memory in MiB, compute capability); `status`
is its state (driver and CUDA driver versions, MIG mode now and after the next reset with the MIG devices, and
whether it stopped answering). The agent writes both in one request, so there is no status subresource.

`kubectl get gpudevices` (short name `gpudev`) shows node, index, product, memory and MIG mode; `-o wide` adds the
UUID and the driver version. The schema is structural; lists of MIG devices are atomic, since the agent replaces
them whole.
"""

from __future__ import annotations

import copy
from typing import Any

from gpu_operator.render.k8s import Object, metadata

__all__ = ["GROUP", "KIND", "NAME", "PLURAL", "VERSION", "gpu_device_crd"]

GROUP = "gpu.pulumi-gpu-operator.io"
VERSION = "v1alpha1"
KIND = "GpuDevice"
PLURAL = "gpudevices"
NAME = f"{PLURAL}.{GROUP}"


def _string(description: str, **extra: Any) -> Object:
    return {"type": "string", "description": description, **extra}


def _integer(description: str, **extra: Any) -> Object:
    return {"type": "integer", "format": "int64", "minimum": 0, "description": description, **extra}


_MIG_MODE = ("enabled", "disabled")

_MIG_DEVICE: Object = {
    "type": "object",
    "description": "A MIG device: one compute instance in one GPU instance.",
    "required": ["index", "gpuInstanceId", "computeInstanceId"],
    "properties": {
        "index": _integer("The MIG device's index on its GPU."),
        "uuid": _string("The MIG device's UUID (MIG-...)."),
        "profile": _string("The MIG profile, e.g. 1g.10gb or 1c.2g.20gb."),
        "gpuInstanceId": _integer("The GPU instance id."),
        "computeInstanceId": _integer("The compute instance id within the GPU instance."),
        "memoryMiB": _integer("Frame-buffer memory of the MIG device in MiB."),
        "multiprocessors": _integer("Streaming multiprocessors of the MIG device."),
    },
}

_SPEC: Object = {
    "type": "object",
    "description": "What the GPU is.",
    "required": ["nodeName", "index"],
    "properties": {
        "nodeName": _string("The node the GPU is in."),
        "index": _integer("The GPU's NVML index on its node."),
        "uuid": _string("The GPU's UUID (GPU-...)."),
        "product": _string("The product name NVML reports, e.g. NVIDIA H100 80GB HBM3."),
        "pciBusId": _string("The PCI address as NVML reports it, e.g. 00000000:3B:00.0."),
        "memoryMiB": _integer("Total frame-buffer memory in MiB."),
        "computeCapability": _string("The CUDA compute capability, e.g. 9.0.", pattern=r"^[0-9]+\.[0-9]+$"),
    },
}

_STATUS: Object = {
    "type": "object",
    "description": "What state the GPU is in, as last observed on its node.",
    "properties": {
        "driverVersion": _string("The NVIDIA driver version, e.g. 570.86.15."),
        "cudaDriverVersion": _string("The CUDA version the driver supports, e.g. 12.8."),
        "lost": {"type": "boolean", "description": "The GPU stopped answering (fell off the bus)."},
        "mig": {
            "type": "object",
            "description": "Multi-Instance GPU mode and devices.",
            "required": ["mode"],
            "properties": {
                "mode": _string(
                    "MIG mode in force; unsupported for GPUs without MIG.", enum=[*_MIG_MODE, "unsupported"]
                ),
                "pendingMode": _string("MIG mode after the next GPU reset.", enum=list(_MIG_MODE)),
                "devices": {
                    "type": "array",
                    "description": "The MIG devices of the GPU.",
                    "x-kubernetes-list-type": "atomic",
                    "items": _MIG_DEVICE,
                },
            },
        },
    },
}

_SCHEMA: Object = {
    "type": "object",
    "description": "One physical NVIDIA GPU of a node, published by the feature-discovery agent.",
    "required": ["spec"],
    "properties": {
        "apiVersion": _string("The versioned schema of this representation of an object."),
        "kind": _string("The REST resource this object represents."),
        "metadata": {"type": "object"},
        "spec": _SPEC,
        "status": _STATUS,
    },
}

_COLUMNS: list[Object] = [
    {"name": "Node", "type": "string", "jsonPath": ".spec.nodeName", "description": "The node the GPU is in."},
    {"name": "Index", "type": "integer", "jsonPath": ".spec.index", "description": "NVML index on the node."},
    {"name": "Product", "type": "string", "jsonPath": ".spec.product", "description": "Product name."},
    {"name": "Memory", "type": "integer", "jsonPath": ".spec.memoryMiB", "description": "Memory in MiB."},
    {"name": "MIG", "type": "string", "jsonPath": ".status.mig.mode", "description": "MIG mode in force."},
    {"name": "UUID", "type": "string", "jsonPath": ".spec.uuid", "priority": 1, "description": "GPU UUID."},
    {
        "name": "Driver",
        "type": "string",
        "jsonPath": ".status.driverVersion",
        "priority": 1,
        "description": "Driver version.",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def gpu_device_crd() -> Object:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of `GpuDevice`."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata(NAME),
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "gpudevice",
                "shortNames": ["gpudev"],
                "categories": ["gpu"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(_SCHEMA)},
                    "additionalPrinterColumns": copy.deepcopy(_COLUMNS),
                }
            ],
        },
    }
