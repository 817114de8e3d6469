"""Pods that hold NVIDIA GPUs through Dynamic Resource Allocation: a ResourceClaim allocated by `gpu.nvidia.com`.

A pod asks for DRA devices in `spec.resourceClaims`: each entry names a ResourceClaim directly
(`resourceClaimName`) or a template, whose generated claim's name the pod's `status.resourceClaimStatuses` gives
once it exists. The claim's `status.allocation.devices.results` say which driver allocated each device. A pod with
a result of NVIDIA's GPU DRA driver uses a GPU as surely as one that requests `nvidia.com/gpu`: it holds the
driver open, so a driver reload must evict it first.

Two readers, two rules, as in NVIDIA's code:

- the driver manager (k8s-driver-manager v0.12.0 `podHasGPUResourceClaim`): every NVIDIA result counts; a claim
  that no longer exists counts as none; any other read error is an error;
- the upgrade controller (gpu-operator v26.7.0 `PodHasNVIDIAGPUClaim`, includeAdminAccess false): admin-access
  results (monitoring operands' management view) do not count; a claim that cannot be read counts as a GPU claim
  (evicting one pod too many is recoverable, reloading a driver under a running job is not).

This module is the pure part (names, allocation); the readers fetch the claims.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["NVIDIA_GPU_DRA_DRIVER", "allocated_to_nvidia_gpu", "claim_names"]

#: The driver name of NVIDIA's GPU DRA driver in a claim's allocation results.
NVIDIA_GPU_DRA_DRIVER = "gpu.nvidia.com"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def claim_names(pod: Any) -> list[str]:
    """The names of the ResourceClaims a pod (lightkube object or dict) holds, in spec order; an entry whose
    generated claim does not exist yet has nothing allocated and is left out."""
    spec, status = _get(pod, "spec"), _get(pod, "status")
    generated = {_get(item, "name"): _get(item, "resourceClaimName")
                 for item in (_get(status, "resourceClaimStatuses") or ()) if status is not None}
    names = []
    for entry in (_get(spec, "resourceClaims") or ()) if spec is not None else ():
        name = _get(entry, "resourceClaimName") or generated.get(_get(entry, "name"))
        if name:
            names.append(str(name))
    return names


def allocated_to_nvidia_gpu(claim: Any, *, include_admin_access: bool) -> bool:
    """A ResourceClaim (lightkube object or dict) has a device allocated by NVIDIA's GPU DRA driver."""
    allocation = _get(_get(claim, "status"), "allocation")
    devices = _get(allocation, "devices") if allocation is not None else None
    results: Iterable[Any] = (_get(devices, "results") or ()) if devices is not None else ()
    for result in results:
        if not include_admin_access and _get(result, "adminAccess"):
            continue
        if _get(result, "driver") == NVIDIA_GPU_DRA_DRIVER:
            return True
    return False
