"""The monitored entities of a node and the labels that identify their series.

dcgm-exporter's default device selection (`--devices f`, "flex") monitors each GPU without MIG as itself and
each MIG-enabled GPU through its GPU instances. Every series of an entity starts with the same labels, in this
order: `gpu` (NVML index), `UUID` (`uuid` with `--use-old-namespace`; the parent GPU's for a GPU instance),
`pci_bus_id` (NVML's form, `00000000:18:00.0`), `device` (`nvidia<index>`), `modelName` (NVML's name;
`--replace-blanks-in-model-name` turns spaces into dashes), then for a GPU instance `GPU_I_PROFILE` (the GPU
instance profile as DCGM names it, `1g.10gb`; `7g.79gb` where node labels say `7g.80gb`, see
:func:`gpu_instance_profile`) and `GPU_I_ID` (its NVML id), then `hostname` unless `--no-hostname` (the label
is spelled `hostname` from dcgm-exporter 4.8.3 on - the version the GPU operator ships - and `Hostname` before).

An entity is also keyed for pod attribution the way dcgm-exporter keys it: a GPU instance by `<gpu>-<GI id>`,
a GPU by its UUID or, with `--kubernetes-gpu-id-type=device-name`, by `nvidia<index>`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpu_operator.agents.exposition import Labels
from gpu_operator.agents.nvml import GpuInfo, MigDevice

__all__ = [
    "DEVICE_NAME",
    "GPU_ID_TYPES",
    "HOSTNAME_LABEL",
    "UID",
    "Entity",
    "IdentityOptions",
    "build_entities",
    "gpu_instance_profile",
    "model_label",
]

UID = "uid"
DEVICE_NAME = "device-name"
GPU_ID_TYPES = (UID, DEVICE_NAME)
HOSTNAME_LABEL = "hostname"
_COMPUTE_SLICES_PREFIX = re.compile(r"^\d+c\.")
_ENGINE_SUFFIX = re.compile(r"^\d+g\.\d+gb([+-].*)\Z")
_MIB_PER_GB = 1024


@dataclass(frozen=True, slots=True)
class IdentityOptions:
    """The flags that shape identity labels and attribution keys."""

    hostname: str | None
    use_old_namespace: bool = False
    replace_blanks_in_model_name: bool = False
    gpu_id_type: str = UID


@dataclass(frozen=True, slots=True)
class Entity:
    """A GPU, or one GPU instance of a MIG-enabled GPU, with its identity labels and attribution key."""

    gpu: GpuInfo
    gpu_instance_id: int | None
    mig_device: MigDevice | None
    labels: Labels
    key: str

    @property
    def index(self) -> int:
        return self.gpu.index


def model_label(name: str | None, replace_blanks: bool) -> str:
    text = name or ""
    return "-".join(text.split()) if replace_blanks else text


def gpu_instance_profile(device: MigDevice) -> str:
    """The GPU instance profile of a MIG device as DCGM names the entity: `<slices>g.<ceil(MiB / 1024)>gb`.

    This is deliberately not go-nvlib's name (GFD's and the device plugin's): go-nvlib rounds the memory
    share up to eighths of the whole GPU, DCGM divides the instance's own memory by 1024 and rounds up, so the
    A100 80GB's 80384 MiB whole-GPU instance is `7g.80gb` in node labels and `7g.79gb` in the exporter
    NVIDIA ships. Dashboards and alerts written against that exporter keep matching. An engine suffix
    (`+me`) is kept; without attributes the go-nvlib name, less its compute-instance part, is used.
    """
    name = _COMPUTE_SLICES_PREFIX.sub("", device.profile or "")
    attributes = device.attributes
    if attributes is None:
        return name
    suffix = _ENGINE_SUFFIX.search(name)
    gb = -(-attributes.memory_mib // _MIB_PER_GB)
    return f"{attributes.gpu_instance_slices}g.{gb}gb" + (suffix.group(1) if suffix else "")


def _identity(gpu: GpuInfo, options: IdentityOptions, instance: tuple[str, int] | None) -> Labels:
    labels = [
        ("gpu", str(gpu.index)),
        ("uuid" if options.use_old_namespace else "UUID", gpu.uuid or ""),
        ("pci_bus_id", "" if gpu.pci is None else gpu.pci.bus_id),
        ("device", f"nvidia{gpu.index}"),
        ("modelName", model_label(gpu.name, options.replace_blanks_in_model_name)),
    ]
    if instance is not None:
        labels += [("GPU_I_PROFILE", instance[0]), ("GPU_I_ID", str(instance[1]))]
    if options.hostname:
        labels.append((HOSTNAME_LABEL, options.hostname))
    return tuple(labels)


def _gpu_key(gpu: GpuInfo, options: IdentityOptions) -> str:
    return f"nvidia{gpu.index}" if options.gpu_id_type == DEVICE_NAME else gpu.uuid or ""


def _instances(gpu: GpuInfo) -> list[MigDevice]:
    """One MIG device per GPU instance (compute instances of the same GPU instance share it), by GI id."""
    first: dict[int, MigDevice] = {}
    for device in gpu.mig_devices:
        first.setdefault(device.gpu_instance_id, device)
    return [first[gi] for gi in sorted(first)]


def _entities_of(gpu: GpuInfo, options: IdentityOptions) -> list[Entity]:
    if not gpu.mig_enabled:
        return [Entity(gpu, None, None, _identity(gpu, options, None), _gpu_key(gpu, options))]
    return [
        Entity(
            gpu,
            device.gpu_instance_id,
            device,
            _identity(gpu, options, (gpu_instance_profile(device), device.gpu_instance_id)),
            f"{gpu.index}-{device.gpu_instance_id}",
        )
        for device in _instances(gpu)
    ]


def build_entities(gpus: Sequence[GpuInfo], options: IdentityOptions) -> tuple[Entity, ...]:
    """Every monitored entity, GPUs in NVML order and GPU instances by id within their GPU."""
    return tuple(entity for gpu in gpus for entity in _entities_of(gpu, options))
