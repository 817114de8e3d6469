"""The NVIDIA device plugin's config file (api/config/v1): flags, GPU sharing by time-slicing or MPS.

A ConfigMap holds several of these under named keys; a node picks one with the `nvidia.com/device-plugin.config`
label (the ConfigMap's default key applies otherwise). The rules below are the plugin's own: a config it would
refuse at start-up on the node is refused here, at `pulumi preview`.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.plugins import MigStrategy
from gpu_operator.config.yaml_reader import parse_yaml_value
from gpu_operator.facts.resource_names import qualified_resource_name

__all__ = [
    "MAX_MPS_REPLICAS",
    "MAX_TIME_SLICING_REPLICAS",
    "DeviceFlags",
    "DevicePluginConfig",
    "GfdFlags",
    "ImexSpec",
    "PluginFlags",
    "ReplicatedResource",
    "ReplicatedResources",
    "ResourcePattern",
    "ResourcesSpec",
    "SharingSpec",
    "parse_device_plugin_config",
]

#: Time-slicing replicas per GPU, at most: AKS runs at most 250 pods on a node (its `maxPods` ceiling), and each
#: replica is a device for one pod, so more replicas than pods on the node could never all be allocated.
MAX_TIME_SLICING_REPLICAS = 250
#: MPS replicas per GPU, at most: the clients one MPS server takes on Volta and newer (the plugin's MPS control
#: daemon refuses more: "maximum allowed replicas exceeded"; pre-Volta GPUs take 16).
MAX_MPS_REPLICAS = 48
DeviceListStrategy = Literal["envvar", "volume-mounts", "cdi-annotations", "cdi-cri"]


class PluginFlags(ConfigModel):
    pass_device_specs: bool | None = None
    device_list_strategy: DeviceListStrategy | tuple[DeviceListStrategy, ...] | None = None
    device_id_strategy: Literal["uuid", "index"] | None = Field(default=None, alias="deviceIDStrategy")
    cdi_annotation_prefix: str | None = None
    nvidia_ctk_path: str | None = Field(default=None, alias="nvidiaCTKPath")
    container_driver_root: str | None = None
    shared_devices_allocation_policy: Literal["distributed", "packed"] | None = None


class GfdFlags(ConfigModel):
    oneshot: bool | None = None
    no_timestamp: bool | None = None
    sleep_interval: str | None = None
    output_file: str | None = None
    machine_type_file: str | None = None


class DeviceFlags(ConfigModel):
    mig_strategy: MigStrategy | None = None
    fail_on_init_error: bool | None = None
    mps_root: str | None = None
    nvidia_driver_root: str | None = None
    nvidia_dev_root: str | None = None
    gdrcopy_enabled: bool | None = None
    gds_enabled: bool | None = None
    mofed_enabled: bool | None = None
    use_node_feature_api: bool | None = Field(default=None, alias="useNodeFeatureAPI")
    device_discovery_strategy: Literal["auto", "nvml", "tegra"] | None = None
    plugin: PluginFlags | None = None
    gfd: GfdFlags | None = None


class ResourcePattern(ConfigModel):
    pattern: str
    name: str


class ResourcesSpec(ConfigModel):
    """Parsed but ignored by the plugin (it logs a warning); accepted for compatibility."""

    gpus: tuple[ResourcePattern, ...] = ()
    mig: tuple[ResourcePattern, ...] = ()


class ReplicatedResource(ConfigModel):
    """One resource shared `replicas` ways (`nvidia.com/gpu` with replicas 4 → 4 pods per GPU)."""

    name: str
    rename: str | None = None
    devices: Literal["all"] | int | tuple[int | str, ...] = "all"
    replicas: int = Field(description="how many pods may share each device; at least 2")

    @field_validator("name", "rename")
    @classmethod
    def _resource_name(cls, value: str | None) -> str | None:
        """NVIDIA's `NewResourceName`, for `name` and `rename` alike (:mod:`gpu_operator.facts.resource_names`)."""
        return None if value is None else qualified_resource_name(value)

    @field_validator("replicas")
    @classmethod
    def _shares_something(cls, value: int) -> int:
        if value < 2:
            raise ValueError(f"replicas must be at least 2 (got {value}); a GPU with one replica is not shared")
        if value > MAX_TIME_SLICING_REPLICAS:
            raise ValueError(f"must be at most {MAX_TIME_SLICING_REPLICAS} (got {value}): each replica is "
                             f"a device for one pod and AKS runs at most {MAX_TIME_SLICING_REPLICAS} pods on a node, "
                             "so the rest could never be allocated")
        return value

    @field_validator("devices")
    @classmethod
    def _positive_count(cls, value: Any) -> Any:
        if isinstance(value, int) and value <= 0:
            raise ValueError("a device count must be greater than 0")
        return value


class ReplicatedResources(ConfigModel):
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool | None = None
    resources: tuple[ReplicatedResource, ...]

    @field_validator("resources")
    @classmethod
    def _unique(cls, values: tuple[ReplicatedResource, ...]) -> tuple[ReplicatedResource, ...]:
        if not values:
            raise ValueError("list at least one resource to share, e.g. {name: nvidia.com/gpu, replicas: 4}")
        names = [r.name for r in values]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"resource listed twice: {', '.join(duplicates)}")
        return values


class SharingSpec(ConfigModel):
    """GPU sharing: time-slicing or MPS, one of them (the plugin would silently use MPS when both are given)."""

    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None

    @model_validator(mode="after")
    def _one_strategy(self) -> Self:
        if self.time_slicing is not None and self.mps is not None:
            raise ValueError("timeSlicing and mps are both set, and the device plugin would use mps only (time-"
                             "slicing ignored): keep one of them, or put each in its own named config")
        for resource in self.mps.resources if self.mps is not None else ():
            if resource.replicas > MAX_MPS_REPLICAS:
                raise ValueError(f"mps: {resource.name} replicas must be at most {MAX_MPS_REPLICAS} (got "
                                 f"{resource.replicas}), the clients one MPS server takes: lower replicas, or use "
                                 "timeSlicing")
        return self


class ImexSpec(ConfigModel):
    channel_ids: tuple[int, ...] = Field(default=(), alias="channelIDs")
    required: bool = False

    @field_validator("channel_ids")
    @classmethod
    def _only_channel_zero(cls, values: tuple[int, ...]) -> tuple[int, ...]:
        if values not in ((), (0,)):
            raise ValueError("only IMEX channel 0 is supported: use [] or [0]")
        return values


class DevicePluginConfig(ConfigModel):
    """One named device-plugin config (a value in the device-plugin ConfigMap)."""

    version: Literal["v1", ""] = "v1"
    flags: DeviceFlags = DeviceFlags()
    resources: ResourcesSpec | None = None
    sharing: SharingSpec | None = None
    imex: ImexSpec | None = None

    @model_validator(mode="after")
    def _mps_rules(self) -> Self:
        if self.uses_mps and self.flags.mig_strategy == "mixed":
            raise ValueError("sharing.mps cannot be used with flags.migStrategy 'mixed' (use none or single)")
        return self

    @property
    def uses_mps(self) -> bool:
        return bool(self.sharing and self.sharing.mps)


def parse_device_plugin_config(value: Any) -> Any:
    """Accept a config as a mapping or as YAML text (the form Helm's `config.data` uses)."""
    if isinstance(value, str):
        return parse_yaml_value(value) or {}
    return value
