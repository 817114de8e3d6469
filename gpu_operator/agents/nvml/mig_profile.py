"""MIG profile names, computed the way NVIDIA's go-nvlib computes them.

A MIG device is a compute instance (C slices) inside a GPU instance (G slices) with part of the GPU's memory.
Its profile is written `<G>g.<GB>gb` when C equals G and `<C>c.<G>g.<GB>gb` otherwise, followed by a suffix for
GPU instance profiles with special engines (`+me` media extensions, `+me.all`, `+gfx`, `-me`).

GB is not the memory size rounded: it is the device's total memory in whole GiB (rounded up) times the MIG
device's share of the memory, that share first rounded *up* to eighths. This is why a 9.5 GiB instance of an
80 GB A100 is called `1g.10gb` and a 16 GiB instance of a 141 GB H200 is called `1g.18gb`.
"""

from __future__ import annotations

import math

import pynvml

from gpu_operator.agents.nvml.errors import NvmlNotSupported

__all__ = [
    "GPU_INSTANCE_SLICES",
    "GPU_INSTANCE_SUFFIX",
    "COMPUTE_INSTANCE_SLICES",
    "mig_memory_gb",
    "mig_profile_name",
    "resource_profile_name",
]

#: GPU instance profile index (NVML_GPU_INSTANCE_PROFILE_*) -> slices.
GPU_INSTANCE_SLICES: dict[int, int] = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: 2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: 3,
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: 4,
    pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: 7,
    pynvml.NVML_GPU_INSTANCE_PROFILE_8_SLICE: 8,
    pynvml.NVML_GPU_INSTANCE_PROFILE_6_SLICE: 6,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1: 2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX: 2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX: 4,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME: 2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: 1,
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME: 2,
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX: 3,
}

#: GPU instance profile index -> suffix of the profile name (absent: no suffix).
GPU_INSTANCE_SUFFIX: dict[int, str] = {
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: "+me",
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1: "+me",
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX: "+gfx",
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX: "+gfx",
    pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX: "+gfx",
    pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX: "+gfx",
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME: "-me",
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME: "-me",
    pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: "+me.all",
    pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME: "+me.all",
}

#: Compute instance profile index (NVML_COMPUTE_INSTANCE_PROFILE_*) -> slices.
COMPUTE_INSTANCE_SLICES: dict[int, int] = {
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE: 1,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE: 2,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE: 3,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE: 4,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE: 7,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE: 8,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE: 6,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1: 1,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL: 7,
}

_GIB = 1 << 30
_MIB = 1 << 20
_EIGHTHS = 8


def _round_half_away(value: float) -> int:
    """Go's math.Round: halves go away from zero (Python's round() would send 70.5 to 70)."""
    return math.floor(value + 0.5)


def mig_memory_gb(mig_memory_mib: int, device_memory_bytes: int) -> int:
    """The GB figure in a profile name: the memory share rounded up to eighths, times the total in whole GiB."""
    share = mig_memory_mib * _MIB / device_memory_bytes
    share = math.ceil(share * _EIGHTHS) / _EIGHTHS
    total_gib = -(-device_memory_bytes // _GIB)
    return _round_half_away(share * total_gib)


def mig_profile_name(
    gpu_instance_profile: int, compute_instance_profile: int, mig_memory_mib: int, device_memory_bytes: int
) -> str:
    """The profile name for profile indices (not profile ids) and memory sizes, e.g. (0, 0, 9728, 80 GiB) -> 1g.10gb.

    An index missing from the tables (one a newer driver defines) raises `NvmlNotSupported`, so callers'
    NVML error handling leaves the profile unnamed instead of the agent exiting.
    """
    g = GPU_INSTANCE_SLICES.get(gpu_instance_profile)
    c = COMPUTE_INSTANCE_SLICES.get(compute_instance_profile)
    if g is None or c is None:
        raise NvmlNotSupported(
            f"MIG profile index unknown to this agent: GPU instance {gpu_instance_profile}, "
            f"compute instance {compute_instance_profile}"
        )
    gb = mig_memory_gb(mig_memory_mib, device_memory_bytes)
    suffix = GPU_INSTANCE_SUFFIX.get(gpu_instance_profile, "")
    base = f"{g}g.{gb}gb" if c == g else f"{c}c.{g}g.{gb}gb"
    return base + suffix


def resource_profile_name(profile: str) -> str:
    """The profile as Kubernetes resource names and labels spell it: `+` becomes `.` (1g.10gb+me -> 1g.10gb.me)."""
    return profile.replace("+", ".")
