"""Loading a mig-parted config file and resolving a named config to a layout per GPU.

A bad file (not YAML, an unknown `version`, a malformed profile) is a `MigConfigError` naming the field; a
config name the file lacks, or a profile a GPU does not offer, is found when the config is selected for the
node's GPUs. When several layouts of a config match a GPU, the last one wins, as mig-parted applies them in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpu_operator.mig.matching import normal_pci_id

__all__ = [
    "GpuLayout",
    "MigConfigError",
    "MigDeviceLayout",
    "MigPartedConfig",
    "load_config",
    "parse_config",
    "read_document",
    "select",
]

#: go-nvlib profile strings: 1g.10gb, 1c.2g.20gb, 1g.10gb+me, 1g.24gb+gfx, 1g.24gb-me, 1g.24gb+me.all
_PROFILE = re.compile(r"^([1-8]c\.)?[1-8]g\.[0-9]+gb([+-](me|gfx|me\.all))?$")
_PCI_ID = re.compile(r"^0x[0-9A-Fa-f]{8}$")


class MigDeviceLayout(BaseModel):
    """The MIG layout for a set of GPUs (the agent's reading of the file; agents import no deployment code)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    device_filter: str | tuple[str, ...] | None = Field(default=None, alias="device-filter")
    devices: Literal["all"] | tuple[int, ...]
    mig_enabled: bool = Field(alias="mig-enabled")
    mig_devices: dict[str, int] = Field(default={}, alias="mig-devices")

    @field_validator("device_filter")
    @classmethod
    def _pci_ids(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        for pci_id in (value,) if isinstance(value, str) else value or ():
            if not _PCI_ID.match(pci_id):
                raise ValueError(f"{pci_id!r} is not a PCI device id such as '0x233510DE'")
        return value

    @field_validator("mig_devices")
    @classmethod
    def _profiles(cls, value: dict[str, int]) -> dict[str, int]:
        for profile, count in value.items():
            if not _PROFILE.match(profile):
                raise ValueError(f"{profile!r} is not a MIG profile such as '1g.10gb' or '1g.10gb+me'")
            if count < 0:
                raise ValueError(f"count for {profile!r} must not be negative")
        return value


class MigPartedConfig(BaseModel):
    """A whole mig-parted config file: `version: v1` and the named layouts."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    version: Literal["v1"]
    mig_configs: dict[str, tuple[MigDeviceLayout, ...]] = Field(alias="mig-configs")

    @field_validator("mig_configs")
    @classmethod
    def _non_empty(cls, value: dict[str, tuple[MigDeviceLayout, ...]]) -> dict[str, tuple[MigDeviceLayout, ...]]:
        if not value:
            raise ValueError("define at least one MIG config")
        empty = sorted(name for name, layouts in value.items() if not layouts)
        if empty:
            raise ValueError(f"MIG config(s) without any device layout: {', '.join(empty)}")
        return value


class MigConfigError(ValueError):
    """A mig-parted config file or config name that cannot be applied."""


@dataclass(frozen=True, slots=True)
class GpuLayout:
    enabled: bool
    devices: dict[str, int]


def read_document(text: str, source: str) -> dict[str, Any]:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise MigConfigError(f"{source}: not valid YAML: {error}") from error
    if not isinstance(document, dict):
        raise MigConfigError(f"{source}: expected a mapping with 'version: v1' and 'mig-configs'")
    return document


def parse_config(text: str, source: str) -> MigPartedConfig:
    document = read_document(text, source)
    try:
        return MigPartedConfig.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()
        )
        raise MigConfigError(f"{source}: {problems} (see the mig-parted v1 config format)") from None


def load_config(path: str | Path) -> MigPartedConfig:
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise MigConfigError(f"cannot read MIG config file {path}: {error.strerror}") from None
    return parse_config(text, str(path))


def select(config: MigPartedConfig, name: str, gpus: list[tuple[int, str]]) -> dict[int, GpuLayout]:
    """The layout of config `name` for each (index, PCI id) it covers."""
    layouts = config.mig_configs.get(name)
    if layouts is None:
        raise MigConfigError(f"no MIG config named {name!r} (the file defines {', '.join(config.mig_configs)})")
    chosen: dict[int, GpuLayout] = {}
    for layout in layouts:
        ids = layout.device_filter
        wanted = None if ids is None else {normal_pci_id(i) for i in ((ids,) if isinstance(ids, str) else ids)}
        for index, pci_id in gpus:
            if wanted is not None and normal_pci_id(pci_id) not in wanted:
                continue
            if layout.devices != "all" and index not in layout.devices:
                continue
            devices = {k: v for k, v in layout.mig_devices.items() if v} if layout.mig_enabled else {}
            chosen[index] = GpuLayout(layout.mig_enabled, devices)
    return chosen
