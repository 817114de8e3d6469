"""Labels describing one schedulable resource: `<resource>.product`, `.count`, `.replicas`, `.memory`, ...

Every resource the device plugin advertises (`nvidia.com/gpu`, or `nvidia.com/mig-<profile>` under the mixed
MIG strategy) gets a group of labels keyed by its name. Sharing enters through three of them: `replicas` (how
many replicas of each device the plugin advertises; 0 when sharing does not apply to the device at all, as for
MIG-enabled GPUs), `sharing-strategy` (the active strategy, but only when this resource is replicated) and the
`-SHARED` suffix of `product` (replicated and not renamed to `<name>.shared`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.agents.feature_discovery.errors import LabelError, Labels
from gpu_operator.agents.feature_discovery.product import (
    architecture_family,
    product_name,
)
from gpu_operator.agents.nvml import GpuInfo, MigDevice, resource_profile_name
from gpu_operator.agents.plugin_config import Sharing, SharingStrategy

__all__ = [
    "GPU_RESOURCE",
    "MIG_RESOURCE_PREFIX",
    "MIG_ATTRIBUTE_LABELS",
    "ResourceSharing",
    "resource_sharing",
    "full_gpu_labels",
    "mig_device_labels",
    "invalid_mig_labels",
]

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

#: Label suffix -> MigAttributes field, for the attribute labels of MIG resources.
MIG_ATTRIBUTE_LABELS: tuple[tuple[str, str], ...] = (
    ("memory", "memory_mib"),
    ("multiprocessors", "multiprocessors"),
    ("slices.gi", "gpu_instance_slices"),
    ("slices.ci", "compute_instance_slices"),
    ("engines.copy", "copy_engines"),
    ("engines.decoder", "decoders"),
    ("engines.encoder", "encoders"),
    ("engines.jpeg", "jpegs"),
    ("engines.ofa", "ofas"),
)


@dataclass(frozen=True, slots=True)
class ResourceSharing:
    """How one resource is shared, as its labels show it."""

    replicas: int
    strategy: str
    shared_suffix: bool


#: Sharing of resources that sharing does not apply to (MIG-enabled GPUs, invalid MIG layouts).
NOT_SHARED = ResourceSharing(replicas=0, strategy=SharingStrategy.NONE.value, shared_suffix=False)


def resource_sharing(resource: str, sharing: Sharing | None) -> ResourceSharing:
    """Replicas, strategy label and -SHARED suffix of `resource`; `sharing=None` means sharing does not apply."""
    if sharing is None:
        return NOT_SHARED
    replication = sharing.replication_of(resource)
    replicas = replication.replicas if replication is not None and replication.replicas > 0 else 1
    replicated = replication is not None and replication.replicas > 1
    return ResourceSharing(
        replicas=replicas,
        strategy=sharing.strategy.value if replicas > 1 else SharingStrategy.NONE.value,
        shared_suffix=replicated and replication is not None and not replication.renamed,
    )


def _labels(resource: str, values: Mapping[str, object]) -> Labels:
    return {f"{resource}.{suffix}": str(value) for suffix, value in values.items() if value is not None}


def _base(resource: str, parts: list[str | None], count: int, shared: ResourceSharing) -> Labels:
    return _labels(
        resource,
        {
            "product": product_name(parts, shared.shared_suffix),
            "count": count,
            "replicas": shared.replicas,
            "sharing-strategy": shared.strategy,
        },
    )


def full_gpu_labels(gpu: GpuInfo, count: int, sharing: Sharing | None) -> Labels:
    """`nvidia.com/gpu.*` for `count` GPUs like `gpu` (memory and architecture left out when unknown)."""
    labels = _base(GPU_RESOURCE, [gpu.name], count, resource_sharing(GPU_RESOURCE, sharing))
    if gpu.memory_total_mib:
        labels.update(_labels(GPU_RESOURCE, {"memory": gpu.memory_total_mib}))
    capability = gpu.compute_capability
    if capability is not None and capability.major != 0:
        labels.update(
            _labels(
                GPU_RESOURCE,
                {
                    "family": architecture_family(capability.major, capability.minor),
                    "compute.major": capability.major,
                    "compute.minor": capability.minor,
                },
            )
        )
    return labels


def mig_device_labels(
    resource: str, parent_name: str | None, device: MigDevice, count: int, sharing: Sharing | None
) -> Labels:
    """Labels of a MIG resource: `count` MIG devices of `device`'s profile on GPUs named `parent_name`."""
    if device.profile is None or device.attributes is None:
        raise LabelError(f"cannot determine the MIG profile of MIG device {device.uuid}")
    parts = [parent_name, "MIG", resource_profile_name(device.profile)]
    labels = _base(resource, parts, count, resource_sharing(resource, sharing))
    attributes = {suffix: getattr(device.attributes, field) for suffix, field in MIG_ATTRIBUTE_LABELS}
    labels.update(_labels(resource, attributes))
    return labels


def invalid_mig_labels(model: str | None) -> Labels:
    """What MIG strategy `single` publishes for a layout it cannot expose as one resource."""
    labels = _labels(
        GPU_RESOURCE,
        {"product": product_name([model, "MIG", "INVALID"]), "count": 0, "replicas": 0, "memory": 0},
    )
    labels[f"{GPU_RESOURCE}.sharing-strategy"] = ""
    return labels
