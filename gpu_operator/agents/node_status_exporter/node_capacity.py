"""How many GPUs the device plugin advertises: the Node's capacity (and labels), read from the API server.

The gauge sums the capacity of every resource named `nvidia.com/gpu...` (including shared and renamed
resources such as `nvidia.com/gpu.shared`) or `nvidia.com/mig-...`, each quantity rounded up to a whole
number as Kubernetes' `Quantity.Value()` does. The Node is read with the agents' Kubernetes client and the
pod's service account (`GET /api/v1/nodes/<NODE_NAME>`); the ClusterRole the DaemonSet binds allows that. The
same read gives the labels the state gauges report (:mod:`.gauges`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Protocol

from gpu_operator.agents.kube import NODES, KubeClient, KubeError

__all__ = [
    "GPU_RESOURCE_PREFIX",
    "MIG_RESOURCE_PREFIX",
    "ApiNode",
    "NodeApiError",
    "NodeCapacity",
    "NodeView",
    "count_gpu_resources",
    "count_rdma_resources",
    "quantity_value",
]

GPU_RESOURCE_PREFIX = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
RDMA_RESOURCE_PREFIX = "rdma/"

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{suffix: Decimal(1024) ** power for power, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)\Z")


class NodeApiError(Exception):
    """The Node could not be read, or its capacity not understood."""


@dataclass(frozen=True)
class NodeView:
    """What the probe reads of the Node: `status.capacity` (resource name -> quantity string) and its labels."""

    capacity: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)


class NodeCapacity(Protocol):
    """Reads the Node. Raises NodeApiError."""

    def read(self) -> NodeView: ...


def quantity_value(text: str) -> int:
    """A Kubernetes quantity as an integer, rounded up (`"8"` -> 8, `"1k"` -> 1000, `"500m"` -> 1)."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise NodeApiError(f"not a quantity: {text!r}")
    try:
        return math.ceil(Decimal(match.group(1)) * _SUFFIXES[match.group(2)])
    except InvalidOperation as error:
        raise NodeApiError(f"not a quantity: {text!r}") from error


def count_gpu_resources(capacity: Mapping[str, str]) -> int:
    """The GPUs a device plugin advertises: every `nvidia.com/gpu*` and `nvidia.com/mig-*` resource."""
    return sum(
        quantity_value(quantity)
        for name, quantity in capacity.items()
        if name.startswith((GPU_RESOURCE_PREFIX, MIG_RESOURCE_PREFIX))
    )


def count_rdma_resources(capacity: Mapping[str, str]) -> int:
    """The RDMA devices the Network Operator's device plugins advertise: every `rdma/*` resource."""
    return sum(quantity_value(quantity) for name, quantity in capacity.items() if name.startswith(RDMA_RESOURCE_PREFIX))


class ApiNode:
    """This node's capacity from the API server (`GET /api/v1/nodes/<name>`) through the agents' client."""

    def __init__(self, client: KubeClient, node_name: str) -> None:
        self._client = client
        self._name = node_name

    def read(self) -> NodeView:
        try:
            node = self._client.get(NODES, self._name)
        except KubeError as error:
            message = f"unable to fetch node by name {self._name} to check for GPU resources: {error}"
            raise NodeApiError(message) from error
        capacity = {str(k): str(v) for k, v in (node.get("status", {}).get("capacity") or {}).items()}
        labels = {str(k): str(v) for k, v in (node.get("metadata", {}).get("labels") or {}).items()}
        return NodeView(capacity, labels)
