"""What one monitored entity reported in one collection cycle.

dcgm-exporter monitors *entities*: a GPU without MIG, or each GPU instance of a MIG-enabled GPU (never the
MIG-enabled GPU itself). Device-wide readings (clocks, temperatures, power, energy, PCIe, row remapping, NVLink)
are the GPU's and appear on each of its GPU instances; the frame buffer and the profiling metrics belong to
the entity itself. An :class:`EntityReading` gathers both, plus the last XID and the vGPU licence status,
so every field is a plain function of it (see :mod:`.fields`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_operator.agents.nvml import GpuSample, MemoryInfo

__all__ = ["EntityReading"]


@dataclass(frozen=True, slots=True)
class EntityReading:
    """One entity's values for one cycle. `gpm` maps GPM metric ids to percent or MiB/s."""

    sample: GpuSample
    memory: MemoryInfo | None
    xid: int = 0
    nvlink_rate: int | None = None
    gpm: Mapping[int, float] = field(default_factory=dict)
    license_status: int | None = None
