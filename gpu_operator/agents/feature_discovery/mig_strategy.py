"""Resource labels under the three MIG strategies: none, single and mixed.

Full GPUs are always labelled first, one label group per model name: MIG-enabled GPUs without sharing
(replicas 0), then MIG-disabled GPUs with the configured sharing, so on a mixed node the latter win. The count
of a model includes MIG-enabled and MIG-disabled GPUs alike. When several models share a node they all write
the same `nvidia.com/gpu.*` keys; GFD's winner depends on Go map order, ours is deterministic: within each
of the two passes, the model whose first GPU has the highest index is written last.

* **none**: nothing more.
* **single**: `nvidia.com/mig.strategy=single`, and if any GPU has MIG enabled the `nvidia.com/gpu.*` group is
  overwritten by the MIG devices' (`<model>-MIG-<profile>`, count of MIG devices, MIG memory and attributes).
  A layout single cannot expose as one resource (an enabled GPU without MIG devices, enabled and disabled GPUs
  together, or more than one MIG profile) gets the `-MIG-INVALID` labels instead.
* **mixed**: `nvidia.com/mig.strategy=mixed` and one `nvidia.com/mig-<profile>.*` group per MIG profile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from gpu_operator.agents.feature_discovery.errors import LabelError, Labels
from gpu_operator.agents.feature_discovery.resource_labels import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    full_gpu_labels,
    invalid_mig_labels,
    mig_device_labels,
)
from gpu_operator.agents.nvml import GpuInfo, MigDevice, resource_profile_name
from gpu_operator.agents.plugin_config import Sharing

__all__ = ["MigStrategy", "MIG_STRATEGY_LABEL", "resource_labels", "full_gpu_group_labels"]

MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"


class MigStrategy(str, Enum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


@dataclass(frozen=True, slots=True)
class _ProfileGroup:
    """All MIG devices of one profile: how many, and the first one (with its parent) to describe them."""

    count: int
    device: MigDevice
    parent: GpuInfo


def _model_groups(gpus: Sequence[GpuInfo]) -> dict[str, tuple[GpuInfo, int]]:
    """Model name -> (first GPU of that name, number of GPUs of that name), in first-index order."""
    groups: dict[str, tuple[GpuInfo, int]] = {}
    for gpu in gpus:
        first, count = groups.get(gpu.name or "", (gpu, 0))
        groups[gpu.name or ""] = (first, count + 1)
    return groups


def full_gpu_group_labels(gpus: Sequence[GpuInfo], sharing: Sharing) -> Labels:
    """The `nvidia.com/gpu.*` labels of the full GPUs (MIG-enabled models first, without sharing)."""
    counts = {name: count for name, (_, count) in _model_groups(gpus).items()}
    labels: Labels = {}
    for enabled in (True, False):
        subset = [g for g in gpus if g.mig_enabled is enabled]
        for name, (first, _) in _model_groups(subset).items():
            labels.update(full_gpu_labels(first, counts[name], None if enabled else sharing))
    return labels


def _profile_groups(gpus: Sequence[GpuInfo]) -> dict[str, _ProfileGroup]:
    groups: dict[str, _ProfileGroup] = {}
    for gpu in gpus:
        for device in gpu.mig_devices:
            if device.profile is None:
                raise LabelError(f"cannot determine the MIG profile of MIG device {device.uuid} on GPU {gpu.index}")
            key = resource_profile_name(device.profile)
            group = groups.get(key)
            groups[key] = (
                _ProfileGroup(1, device, gpu)
                if group is None
                else _ProfileGroup(group.count + 1, group.device, group.parent)
            )
    return groups


def _single(gpus: Sequence[GpuInfo], sharing: Sharing) -> Labels:
    enabled = [g for g in gpus if g.mig_enabled]
    if not enabled:
        return {}
    if any(not g.mig_devices for g in enabled) or len(enabled) != len(gpus):
        return invalid_mig_labels(enabled[0].name)
    groups = _profile_groups(enabled)
    if len(groups) != 1:
        return invalid_mig_labels(enabled[0].name)
    (group,) = groups.values()
    return mig_device_labels(GPU_RESOURCE, group.parent.name, group.device, group.count, sharing)


def _mixed(gpus: Sequence[GpuInfo], sharing: Sharing) -> Labels:
    labels: Labels = {}
    for profile, group in _profile_groups([g for g in gpus if g.mig_enabled]).items():
        resource = MIG_RESOURCE_PREFIX + profile
        labels.update(mig_device_labels(resource, group.parent.name, group.device, group.count, sharing))
    return labels


#: Strategy -> the labels it adds after the full-GPU labels.
_MIG_LABELERS: dict[MigStrategy, Callable[[Sequence[GpuInfo], Sharing], Labels]] = {
    MigStrategy.NONE: lambda gpus, sharing: {},
    MigStrategy.SINGLE: _single,
    MigStrategy.MIXED: _mixed,
}


def resource_labels(gpus: Sequence[GpuInfo], strategy: MigStrategy, sharing: Sharing) -> Labels:
    """All resource labels for `gpus` under `strategy` (empty without GPUs)."""
    if not gpus:
        return {}
    labels = full_gpu_group_labels(gpus, sharing)
    if strategy is not MigStrategy.NONE:
        labels[MIG_STRATEGY_LABEL] = strategy.value
    labels.update(_MIG_LABELERS[strategy](gpus, sharing))
    return labels
