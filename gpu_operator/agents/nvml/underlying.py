"""The NVML library underneath an `Nvml`, for readings the `Nvml` interface does not cover.

The interface answers inventory, one-pass telemetry and events. A few readings only one agent needs - GPU
performance monitoring (:mod:`.gpm`) and the vGPU licence state (:mod:`.licensing`) - talk to the library
directly, with device handles they look up by index. This module hands out that library: pynvml for the
driver's NVML, the simulated library for a simulated node, nothing for a node without NVML.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.interface import Nvml

__all__ = ["library_of"]


def library_of(nvml: Nvml) -> Any | None:
    """The NVML library an adapter was opened on, or None (no NVML on this node, or a test double)."""
    if isinstance(nvml, LibraryNvml):
        return nvml._lib
    return None
