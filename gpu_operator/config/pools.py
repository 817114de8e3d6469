"""GPU node pools: the `pools` section, one AKS agent pool per entry.

```yaml
pools:
  - name: h100                      # the AKS pool name: lower-case letters and digits, at most 12, letter first
    vmSize: Standard_ND96isr_H100_v5  # a catalog size, or any size with `gpu` facts declared
    count: 2                        # nodes (with `autoscale`, the initial count)
    autoscale: {minCount: 0, maxCount: 4}
    gpuDriver: operator             # operator: AKS skips its driver (gpuProfile.driver None); aks: AKS installs it
    osSKU: Ubuntu                   # Ubuntu (release follows the Kubernetes version) or Ubuntu2204
    taints: ["sku=gpu:NoSchedule"]  # every operand tolerates these; the default is AKS's GPU convention
    labels: {team: research}        # extra node labels (NVIDIA's labels are derived, not written here)
    migConfig: all-1g.10gb          # the MIG layout (nvidia.com/mig.config) of a MIG-capable pool
    devicePluginConfig: shared-4    # a key of configs.devicePlugin (nvidia.com/device-plugin.config)
    workload: container             # container, or vm-passthrough / vm-vgpu with sandbox workloads
    gpuAllocation: devicePlugin     # devicePlugin, or dra: GPUs claimed through NVIDIA's DRA driver (see `dra`)
    gpu: {model: ..., count: 8, memoryGiB: 80, pciDeviceId: "0x2330", infiniband: {...}}  # for unknown sizes
    driver: canary                  # a driver of its own: a `drivers` entry's name, or an NVIDIADriver spec
```

Fields that are plain AKS agent pool properties keep the AKS API's spelling (`vmSize`, `osSKU`, `vnetSubnetID`,
`osDiskSizeGB`, `availabilityZones`, `upgradeSettings`, `tags`). Scale-down mode is always Delete: with Deallocate,
the operator's driver install keeps failing on nodes that come back (NVIDIA/gpu-operator#729).

AKS's limits are checked here rather than at `pulumi up`: `osDiskSizeGB` is 0 (the VM size's default) or at least
the node image's 30 GB (Azure refuses an OS disk smaller than its image), a zone is listed once, `maxSurge` adds
at least one node and at most 100% of the pool, a pool's `orchestratorVersion` is not newer than the
cluster's (the control plane is upgraded first), and `tags` follow Azure's tag rules (a name of 1 to 512
characters without `<>%&\\?/`, not under the reserved `microsoft`, `azure` or `windows` prefixes; a value of at most
256 characters; at most 50 tags on a resource).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Self

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from gpu_operator.aks.node_images import KUBERNETES_VERSION, OsSku
from gpu_operator.aks.vm_sizes import Gpu, GpuHardware, Infiniband, vm_size
from gpu_operator.config.base import ConfigModel
from gpu_operator.config.kube import count_or_percent
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec
from gpu_operator.config.node_metadata import (
    AKS_LABEL_PREFIX,
    Taint,
    check_label_key,
    check_label_value,
    is_derived_label,
    parse_taint,
)
from gpu_operator.mig.catalog import NVIDIA_VENDOR_ID, model_by_pci_id

__all__ = [
    "DEFAULT_TAINT",
    "POOL_NAME",
    "Autoscale",
    "GpuAllocation",
    "GpuFacts",
    "GpuPool",
    "InfinibandFacts",
    "PoolDriver",
    "UpgradeSettings",
    "Workload",
    "Zone",
    "MAX_TAGS",
    "MIN_OS_DISK_GB",
    "check_kubernetes_version",
    "check_pool_name",
    "check_tags",
    "check_zones",
    "zone_strings",
]

#: AKS's convention for GPU pools: nothing lands there without tolerating it.
DEFAULT_TAINT = "sku=gpu:NoSchedule"
#: AKS's rule for Linux agent pool names.
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}\Z")
#: A subnet's resource id; no segment holds white space (no Azure name does: a pasted id's newline is no part of it).
_SUBNET_ID = re.compile(
    r"^/subscriptions/[^/\s]+/resourceGroups/[^/\s]+/providers/Microsoft\.Network/virtualNetworks/[^/\s]+"
    r"/subnets/[^/\s]+\Z",
    re.IGNORECASE,
)
_PCI_DEVICE = re.compile(r"^(0x)?[0-9a-fA-F]{4}\Z")
_VF_DEVICE = re.compile(r"^[0-9a-f]{4}\Z")

#: The smallest OS disk Azure creates for an AKS node image (the image's own size); 0 means the VM size's default.
MIN_OS_DISK_GB = 30
#: AKS refuses maxSurge 0 (without maxUnavailable, which the pools do not set): no node to upgrade with.
_NO_SURGE = ("adds no node, so AKS could not upgrade the pool (it refuses maxSurge 0 unless nodes may be "
             "unavailable): give at least 1, or a percentage such as '33%'")

Zone = Literal["1", "2", "3"]
#: A pool's own driver: the name of a `drivers` entry, or an NVIDIADriver spec (the union tags are dropped from
#: error paths, see gpu_operator.config.errors).
PoolDriver = Annotated[
    Annotated[str, Tag("str")] | Annotated[NvidiaDriverSpec, Tag("spec[NVIDIADriver]")],
    Discriminator(lambda value: "str" if isinstance(value, str) else "spec[NVIDIADriver]"),
]
Workload = Literal["container", "vm-passthrough", "vm-vgpu"]
#: How pods get the pool's GPUs: counted `nvidia.com/gpu` from the device plugin, or ResourceClaims through DRA.
GpuAllocation = Literal["devicePlugin", "dra"]


def check_pool_name(name: str) -> str:
    if not POOL_NAME.match(name):
        raise ValueError(
            f"{name!r} is not an AKS pool name: 1 to 12 lower-case letters and digits, starting with a letter"
        )
    return name


def check_kubernetes_version(version: str | None) -> str | None:
    if version is not None and not KUBERNETES_VERSION.fullmatch(version):
        raise ValueError(f"{version!r} is not a Kubernetes version such as '1.34' or '1.34.2'")
    return version


def zone_strings(value: Any) -> Any:
    # YAML turns `[1, 2]` into integers; AKS spells zones as strings
    if isinstance(value, (list, tuple)):
        return tuple(str(zone) if isinstance(zone, int) and not isinstance(zone, bool) else zone for zone in value)
    return value


#: Azure's tag limits (Azure Resource Manager, "Use tags to organize your Azure resources").
MAX_TAGS, MAX_TAG_NAME, MAX_TAG_VALUE = 50, 512, 256
_TAG_NAME_FORBIDDEN = set('<>%&\\?/')
_RESERVED_TAG_PREFIXES = ("microsoft", "azure", "windows")


def check_tags(values: dict[str, str]) -> dict[str, str]:
    """Azure resource tags, by Azure's rules; ValueError names the tag and the rule."""
    if len(values) > MAX_TAGS:
        raise ValueError(f"{len(values)} tags: an Azure resource takes at most {MAX_TAGS}")
    for name, value in values.items():
        if not name.strip() or len(name) > MAX_TAG_NAME:
            raise ValueError(f"tag name {name!r} must have 1 to {MAX_TAG_NAME} characters")
        bad = sorted(_TAG_NAME_FORBIDDEN & set(name))
        if bad:
            raise ValueError(f"tag name {name!r} holds {' '.join(bad)}, which Azure refuses in tag names")
        if name.lower().startswith(_RESERVED_TAG_PREFIXES):
            raise ValueError(f"tag name {name!r} starts with a prefix Azure reserves (microsoft, azure, windows)")
        if len(value) > MAX_TAG_VALUE:
            raise ValueError(f"the value of tag {name!r} has {len(value)} characters; Azure takes at most "
                             f"{MAX_TAG_VALUE}")
    return values


def check_zones(values: tuple[str, ...]) -> tuple[str, ...]:
    """Each availability zone once (AKS refuses a list that names one twice)."""
    twice = sorted({zone for zone in values if values.count(zone) > 1})
    if twice:
        raise ValueError(f"zone {', '.join(twice)} is listed twice: list each zone once, e.g. ['1', '2', '3']")
    return values


class Autoscale(ConfigModel):
    """The cluster autoscaler's range for the pool (`enableAutoScaling`, `minCount`, `maxCount`)."""

    min_count: int = Field(ge=0, le=1000)
    max_count: int = Field(ge=1, le=1000)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min_count > self.max_count:
            raise ValueError(f"minCount ({self.min_count}) is greater than maxCount ({self.max_count})")
        return self


class UpgradeSettings(ConfigModel):
    """How AKS upgrades the pool's nodes (`upgradeSettings`; AKS's defaults apply to what is left out)."""

    max_surge: str | None = Field(default=None, description="extra nodes during an upgrade: '1' or '10%'")
    drain_timeout_in_minutes: int | None = Field(default=None, ge=1, le=1440)
    node_soak_duration_in_minutes: int | None = Field(default=None, ge=0, le=30)

    @field_validator("max_surge")
    @classmethod
    def _surge(cls, value: str | None) -> str | None:
        return None if value is None else str(count_or_percent(value, "pool's nodes", _NO_SURGE))


class InfinibandFacts(ConfigModel):
    """InfiniBand NICs of a VM size the catalog does not know."""

    nics: int = Field(ge=1)
    rate_gbps: int = Field(ge=1)
    vf_device_id: str = Field(description="PCI device id of the IB virtual functions, e.g. 101e")

    @field_validator("vf_device_id")
    @classmethod
    def _device(cls, value: str) -> str:
        if not _VF_DEVICE.match(value):
            raise ValueError(f"{value!r} is not a PCI device id such as '101e' (4 lower-case hex digits)")
        return value


class GpuFacts(ConfigModel):
    """The GPUs of a VM size the catalog does not know (or corrections to a known one)."""

    model: str = Field(min_length=1)
    count: int = Field(ge=1)
    memory_gib: int = Field(ge=1, alias="memoryGiB")
    pci_device_id: str | None = Field(default=None, description="the GPU's PCI device id, e.g. 0x2330")
    mig_capable: bool | None = Field(default=None, description="default: whether the MIG catalog knows the GPU")
    vgpu: bool = Field(default=False, description="the VM's GPU is a vGPU (a share the host's vGPU manager gives, "
                       "as on NVads A10 v5): it runs NVIDIA's vGPU guest driver")
    infiniband: InfinibandFacts | None = None

    @field_validator("pci_device_id")
    @classmethod
    def _pci(cls, value: str | None) -> str | None:
        if value is not None and not _PCI_DEVICE.match(value):
            raise ValueError(f"{value!r} is not a PCI device id such as '0x2330'")
        return value

    def hardware(self) -> GpuHardware:
        device_id = int(self.pci_device_id.removeprefix("0x").removeprefix("0X"), 16) if self.pci_device_id else None
        known_mig = device_id is not None and model_by_pci_id(f"0x{device_id:04X}{NVIDIA_VENDOR_ID:04X}") is not None
        gpu = Gpu(self.model, self.memory_gib, device_id, self.mig_capable if self.mig_capable is not None else known_mig)
        ib = self.infiniband
        return GpuHardware(gpu, self.count, Infiniband(ib.nics, ib.rate_gbps, ib.vf_device_id) if ib else None)


class GpuPool(ConfigModel):
    """One AKS GPU node pool and what runs on it."""

    name: str
    vm_size: str = Field(min_length=1)
    count: int | None = Field(default=None, ge=0, le=1000, description="nodes; default 1, or autoscale.minCount")
    autoscale: Autoscale | None = None
    gpu_driver: Literal["operator", "aks"] = "operator"
    os_sku: OsSku = Field(default="Ubuntu", alias="osSKU")
    orchestrator_version: str | None = Field(default=None, description="default: the cluster's Kubernetes version")
    availability_zones: tuple[Zone, ...] = ()
    vnet_subnet_id: str | None = Field(default=None, alias="vnetSubnetID")
    os_disk_size_gb: int | None = Field(default=None, ge=0, le=2048, alias="osDiskSizeGB")
    os_disk_type: Literal["Managed", "Ephemeral"] | None = None
    taints: tuple[str, ...] = (DEFAULT_TAINT,)
    labels: dict[str, str] = {}
    mig_config: str | None = None
    device_plugin_config: str | None = None
    workload: Workload = "container"
    gpu_allocation: GpuAllocation = "devicePlugin"
    gpu: GpuFacts | None = None
    upgrade_settings: UpgradeSettings | None = None
    tags: dict[str, str] = {}
    driver: PoolDriver | None = Field(default=None, description="a driver of its own (default: the cluster's)")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_pool_name(value)

    @field_validator("orchestrator_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return check_kubernetes_version(value)

    @field_validator("availability_zones", mode="before")
    @classmethod
    def _zone_strings(cls, value: Any) -> Any:
        return zone_strings(value)

    @field_validator("availability_zones")
    @classmethod
    def _zones_once(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return check_zones(values)

    @field_validator("os_disk_size_gb")
    @classmethod
    def _os_disk(cls, value: int | None) -> int | None:
        if value is not None and 0 < value < MIN_OS_DISK_GB:
            raise ValueError(f"{value} GB is smaller than the node image ({MIN_OS_DISK_GB} GB), which Azure refuses: "
                             f"give at least {MIN_OS_DISK_GB}, or 0 (or nothing) for the VM size's default")
        return value

    @field_validator("vnet_subnet_id")
    @classmethod
    def _subnet(cls, value: str | None) -> str | None:
        if value is not None and not _SUBNET_ID.match(value):
            raise ValueError(
                "must be a subnet resource id: /subscriptions/<id>/resourceGroups/<group>/providers/"
                "Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>"
            )
        return value

    @field_validator("taints")
    @classmethod
    def _taints(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        keys = [(taint.key, taint.effect) for taint in map(parse_taint, values)]
        duplicates = sorted({f"{k}:{e}" for k, e in keys if keys.count((k, e)) > 1})
        if duplicates:
            raise ValueError(f"taint listed twice: {', '.join(duplicates)}")
        return values

    @field_validator("tags")
    @classmethod
    def _tags(cls, values: dict[str, str]) -> dict[str, str]:
        return check_tags(values)

    @field_validator("labels")
    @classmethod
    def _labels(cls, values: dict[str, str]) -> dict[str, str]:
        for key, value in values.items():
            check_label_key(key)
            check_label_value(value)
            if key.startswith(AKS_LABEL_PREFIX):
                raise ValueError(f"{key!r}: labels under {AKS_LABEL_PREFIX} are set by AKS")
            if is_derived_label(key):
                raise ValueError(
                    f"{key!r} is derived from the pool (GPU, workload, migConfig, devicePluginConfig, gpuAllocation, "
                    "driver); remove it"
                )
        return values

    @property
    def hardware(self) -> GpuHardware | None:
        """The pool's GPUs: the declared `gpu` facts, else the catalog's entry for `vmSize` (None when unknown)."""
        if self.gpu is not None:
            return self.gpu.hardware()
        size = vm_size(self.vm_size)
        return size.hardware if size is not None else None

    @property
    def node_taints(self) -> tuple[Taint, ...]:
        return tuple(parse_taint(text) for text in self.taints)

    @property
    def initial_count(self) -> int:
        """The node count AKS creates the pool with."""
        if self.count is not None:
            return self.count
        return self.autoscale.min_count if self.autoscale is not None else 1

    @property
    def has_infiniband(self) -> bool:
        hardware = self.hardware
        return hardware is not None and hardware.infiniband is not None
