"""Which GPU resource the device plugin advertises on a node, by MIG strategy.

The device plugin names its resources `nvidia.com/gpu` (full GPUs; also MIG devices with the `single`
strategy; `nvidia.com/gpu.shared` and the like when sharing renames it) and, with the `mixed` strategy,
`nvidia.com/mig-<profile>` per MIG profile. The plugin check waits until the node's allocatable resources hold
at least one of the kinds the strategy produces; its workload pod asks for one of them, a MIG device first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GPU_RESOURCE", "MIG_RESOURCE_PREFIX", "RESOURCE_PREFIXES", "allocatable", "gpu_resource"]

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
#: MIG strategy -> resource name prefixes it produces, in order of preference for the workload pod.
RESOURCE_PREFIXES: Mapping[str, tuple[str, ...]] = {
    "none": (GPU_RESOURCE,),
    "single": (GPU_RESOURCE,),
    "mixed": (MIG_RESOURCE_PREFIX, GPU_RESOURCE),
}


def _count(quantity: Any) -> int:
    try:
        return int(str(quantity))
    except ValueError:
        return 0


def allocatable(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return node.get("status", {}).get("allocatable") or {}


def gpu_resource(resources: Mapping[str, Any], strategy: str) -> str | None:
    """The first resource (by preference, then name) the strategy produces with at least one unit, or None."""
    for prefix in RESOURCE_PREFIXES[strategy]:
        found = sorted(
            name for name, quantity in resources.items() if name.startswith(prefix) and _count(quantity) >= 1
        )
        if found:
            return found[0]
    return None
