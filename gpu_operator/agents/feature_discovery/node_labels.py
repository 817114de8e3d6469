"""Node-wide labels: timestamp, machine type, driver and CUDA versions, MIG and MPS capability, GPU mode and
NVLink clique.

* `nvidia.com/gfd.timestamp` - when this run of the agent started, in Unix seconds.
* `nvidia.com/gpu.machine` - the machine-type file (DMI product name), sanitised; `unknown` if unreadable.
* `nvidia.com/cuda.driver.*` / `cuda.driver-version.*` - the driver version split on dots, parts kept as
  strings (`570.86.15`; a leading zero survives); `cuda.runtime.*` / `cuda.runtime-version.*` - the CUDA
  version the driver supports (NVML's integer 12080 is 12.8).
* `nvidia.com/mig.capable` - whether any GPU supports MIG.
* `nvidia.com/mps.capable` - true only when MPS sharing is configured; MPS with MIG enabled is an error.
* `nvidia.com/gpu.mode` - `compute` (all GPUs are 3D controllers), `graphics` (all VGA) or `unknown`.
* `nvidia.com/gpu.clique` - `<cluster UUID>.<clique id>` when the fabric-attached GPUs agree on both.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gpu_operator.agents.feature_discovery.errors import LabelError, Labels
from gpu_operator.agents.feature_discovery.product import sanitise
from gpu_operator.agents.nvml import GpuInfo, SystemInfo
from gpu_operator.agents.plugin_config import Sharing, SharingStrategy

__all__ = [
    "GPU_MODES",
    "UNKNOWN",
    "timestamp_labels",
    "machine_labels",
    "version_labels",
    "mig_capability_labels",
    "mps_labels",
    "gpu_mode_labels",
    "clique_labels",
]

_log = logging.getLogger(__name__)

UNKNOWN = "unknown"

#: PCI class of the GPUs -> `nvidia.com/gpu.mode`.
GPU_MODES: dict[str, str] = {"0x030000": "graphics", "0x030200": "compute"}


def timestamp_labels(now: int | None) -> Labels:
    return {} if now is None else {"nvidia.com/gfd.timestamp": str(now)}


def machine_labels(machine_type: str | None) -> Labels:
    """`machine_type` is the file's content, or None when the file could not be read."""
    return {"nvidia.com/gpu.machine": UNKNOWN if machine_type is None else sanitise(machine_type.strip())}


def version_labels(system: SystemInfo) -> Labels:
    version = system.driver_version
    parts = [] if version is None else version.split(".")
    if not 2 <= len(parts) <= 3:
        raise LabelError(f'error getting driver version: Version "{version}" does not match format "X.Y[.Z]"')
    major, minor, revision = parts[0], parts[1], parts[2] if len(parts) == 3 else ""
    if system.cuda_major is None or system.cuda_minor is None:
        raise LabelError("error getting CUDA driver version")
    cuda_major, cuda_minor = str(system.cuda_major), str(system.cuda_minor)
    return {
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": revision,
        "nvidia.com/cuda.runtime.major": cuda_major,
        "nvidia.com/cuda.runtime.minor": cuda_minor,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": revision,
        "nvidia.com/cuda.driver-version.full": version or "",
        "nvidia.com/cuda.runtime-version.major": cuda_major,
        "nvidia.com/cuda.runtime-version.minor": cuda_minor,
        "nvidia.com/cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}",
    }


def _flag(value: bool) -> str:
    return "true" if value else "false"


def mig_capability_labels(gpus: Sequence[GpuInfo]) -> Labels:
    return {"nvidia.com/mig.capable": _flag(any(g.mig_capable for g in gpus))}


def mps_labels(gpus: Sequence[GpuInfo], sharing: Sharing) -> Labels:
    if sharing.strategy is not SharingStrategy.MPS:
        return {"nvidia.com/mps.capable": "false"}
    enabled = [g.index for g in gpus if g.mig_enabled]
    if enabled:
        raise LabelError(f"MPS sharing is not supported for mig devices (MIG is enabled on GPUs {enabled})")
    return {"nvidia.com/mps.capable": "true"}


def gpu_mode_labels(gpus: Sequence[GpuInfo]) -> Labels:
    classes = {None if g.pci is None else g.pci.device_class for g in gpus}
    mode = GPU_MODES.get(classes.pop() or "", UNKNOWN) if len(classes) == 1 else UNKNOWN
    return {"nvidia.com/gpu.mode": mode}


def clique_labels(gpus: Sequence[GpuInfo]) -> Labels:
    fabrics = [g.fabric for g in gpus if g.fabric is not None and g.fabric.attached]
    clusters = {f.cluster_uuid for f in fabrics}
    cliques = {f.clique_id for f in fabrics}
    if len(clusters) > 1 or len(cliques) > 1:
        _log.warning(
            "GPUs disagree on their NVLink fabric (clusters %s, cliques %s); no clique label", clusters, cliques
        )
        return {}
    if not fabrics:
        return {}
    return {"nvidia.com/gpu.clique": f"{clusters.pop()}.{cliques.pop()}"}
