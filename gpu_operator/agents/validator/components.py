"""The components the validator checks, as a table: name -> check, status file, required settings.

`COMPONENT` (or `--component`) picks one row. Components of NVIDIA's validator that this agent does not
provide have a row in :data:`ELSEWHERE` saying where they are: the node-status metrics are their own agent, the
sandbox (VM passthrough, vGPU, confidential computing) validations stay with NVIDIA's validator image.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpu_operator.agents.validator.context import Context
from gpu_operator.agents.validator.driver import driver
from gpu_operator.agents.validator.gpudirect import gdrcopy, mofed, nvidia_fs, nvidia_peermem
from gpu_operator.agents.validator.status import (
    CUDA_READY,
    DRIVER_READY,
    GDRCOPY_READY,
    MOFED_READY,
    NVIDIA_FS_READY,
    NVIDIA_PEERMEM_READY,
    PLUGIN_READY,
    TOOLKIT_READY,
)
from gpu_operator.agents.validator.toolkit import toolkit
from gpu_operator.agents.validator.workload_checks import cuda, plugin

__all__ = ["COMPONENTS", "ELSEWHERE", "Component"]


@dataclass(frozen=True, slots=True)
class Component:
    """A check, the status file it writes, the settings it cannot run without, and whether
    `SKIP_VALIDATION` may write its file unchecked (only for files without content)."""

    check: Callable[[Context], None]
    status_file: str
    requires: tuple[str, ...] = ()
    skippable: bool = False


COMPONENTS: Mapping[str, Component] = {
    "driver": Component(driver, DRIVER_READY),
    "toolkit": Component(toolkit, TOOLKIT_READY, skippable=True),
    "cuda": Component(cuda, CUDA_READY, requires=("namespace",), skippable=True),
    "plugin": Component(plugin, PLUGIN_READY, requires=("node_name", "namespace"), skippable=True),
    "mofed": Component(mofed, MOFED_READY),
    "nvidia-fs": Component(nvidia_fs, NVIDIA_FS_READY),
    "gdrcopy": Component(gdrcopy, GDRCOPY_READY),
    "nvidia-peermem": Component(nvidia_peermem, NVIDIA_PEERMEM_READY),
}

_SANDBOX = "is a sandbox workload validation, which this agent does not provide; run NVIDIA's validator for it"

#: NVIDIA validator components provided elsewhere -> where.
ELSEWHERE: Mapping[str, str] = {
    "metrics": "is served by `gpu-operator-agent node-status-exporter`",
    "vfio-pci": _SANDBOX,
    "vgpu-manager": _SANDBOX,
    "vgpu-devices": _SANDBOX,
    "cc-manager": _SANDBOX,
}
