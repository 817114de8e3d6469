"""The label set of a node: one pure function of what was observed and how labelling is configured.

    labels = node_labels(snapshot, policy, machine_type, now)

`snapshot` is what NVML and the PCI bus said (taken by :func:`take_snapshot`), `policy` the MIG strategy and
the sharing setup, `machine_type` the machine-type file's content and `now` the run's timestamp (None with
`--no-timestamp`). The labellers run in GFD's order, later ones overwriting earlier ones; without GPUs only the
timestamp and vGPU labels are produced. Where the labels go is not this module's business (see `sinks`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from gpu_operator.agents.feature_discovery.errors import Labels
from gpu_operator.agents.feature_discovery.mig_strategy import (
    MigStrategy,
    resource_labels,
)
from gpu_operator.agents.feature_discovery.node_labels import (
    clique_labels,
    gpu_mode_labels,
    machine_labels,
    mig_capability_labels,
    mps_labels,
    timestamp_labels,
    version_labels,
)
from gpu_operator.agents.feature_discovery.vgpu import vgpu_labels
from gpu_operator.agents.nvml import GpuInfo, Nvml, PciFunction, SystemInfo
from gpu_operator.agents.plugin_config import Sharing

__all__ = ["NodeSnapshot", "LabelPolicy", "LabelInputs", "DEVICE_LABELERS", "node_labels", "take_snapshot"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """What the node looked like: driver facts, GPUs, and its NVIDIA PCI functions (None: bus not scanned)."""

    system: SystemInfo
    gpus: tuple[GpuInfo, ...]
    pci_functions: tuple[PciFunction, ...] | None = None

    @property
    def healthy_gpus(self) -> tuple[GpuInfo, ...]:
        return tuple(g for g in self.gpus if not g.lost)


@dataclass(frozen=True, slots=True)
class LabelPolicy:
    """How to label: the MIG strategy and the sharing section of the device plugin config."""

    mig_strategy: MigStrategy = MigStrategy.NONE
    sharing: Sharing = field(default_factory=Sharing)


@dataclass(frozen=True, slots=True)
class LabelInputs:
    gpus: tuple[GpuInfo, ...]
    system: SystemInfo
    policy: LabelPolicy
    machine_type: str | None


#: The labellers that need GPUs, in GFD's merge order (later ones overwrite earlier ones).
DEVICE_LABELERS: tuple[Callable[[LabelInputs], Labels], ...] = (
    lambda i: machine_labels(i.machine_type),
    lambda i: version_labels(i.system),
    lambda i: mig_capability_labels(i.gpus),
    lambda i: mps_labels(i.gpus, i.policy.sharing),
    lambda i: resource_labels(i.gpus, i.policy.mig_strategy, i.policy.sharing),
    lambda i: gpu_mode_labels(i.gpus),
    lambda i: clique_labels(i.gpus),
)


def node_labels(snapshot: NodeSnapshot, policy: LabelPolicy, machine_type: str | None, now: int | None) -> Labels:
    """Every label of the node. Raises LabelError for states GFD refuses to label."""
    labels = timestamp_labels(now)
    gpus = snapshot.healthy_gpus
    lost = [g.index for g in snapshot.gpus if g.lost]
    if lost:
        _log.warning("GPUs %s are lost; labelling the %d others", lost, len(gpus))
    if gpus:
        inputs = LabelInputs(gpus, snapshot.system, policy, machine_type)
        for labeler in DEVICE_LABELERS:
            labels.update(labeler(inputs))
    labels.update(vgpu_labels(snapshot.pci_functions))
    return labels


def take_snapshot(nvml: Nvml) -> NodeSnapshot:
    """Read the node through the NVML layer (the inventory is re-read, so MIG changes show)."""
    gpus = nvml.devices()
    try:
        functions: tuple[PciFunction, ...] | None = nvml.pci.nvidia_functions()
    except OSError as error:
        _log.warning("cannot scan the PCI bus: %s", error)
        functions = None
    return NodeSnapshot(system=nvml.system(), gpus=gpus, pci_functions=functions)
