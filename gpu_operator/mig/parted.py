"""mig-parted's config file (api/spec/v1): named MIG layouts that `nvidia.com/mig.config` selects per node.

One model for both readers of the format: the config document's `configs.migManager` (which the renderer puts in
the MIG manager's ConfigMap) and the MIG manager agent, which reads the mounted file. A file must say
`version: v1`; the config document may leave it out (:mod:`gpu_operator.config.mig_parted`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["MigDeviceLayout", "MigPartedConfig", "MIG_PROFILE_PATTERN"]

#: go-nvlib profile strings: 1g.10gb, 1c.2g.20gb (a one-slice compute instance in a 2g.20gb GPU instance),
#: 1g.10gb+me, 1g.24gb+gfx, 1g.24gb-me, 1g.24gb+me.all
MIG_PROFILE_PATTERN = re.compile(r"^([1-8]c\.)?[1-8]g\.[0-9]+gb([+-](me|gfx|me\.all))?\Z")
_PCI_ID = re.compile(r"^0x[0-9A-Fa-f]{8}\Z")
_STRICT = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class MigDeviceLayout(BaseModel):
    """The MIG layout for a set of GPUs on a node."""

    model_config = _STRICT

    device_filter: str | tuple[str, ...] | None = Field(default=None, alias="device-filter")
    devices: Literal["all"] | tuple[int, ...]
    mig_enabled: bool = Field(alias="mig-enabled")
    mig_devices: dict[str, int] = Field(default={}, alias="mig-devices")

    @model_validator(mode="after")
    def _mode_and_devices(self) -> MigDeviceLayout:
        """mig-parted's v1 rule (api/spec/v1/spec.go `MigConfigSpec.UnmarshalJSON`): an enabled layout names its
        devices (`{}` for MIG on with no devices); a disabled one names none."""
        if self.mig_enabled and "mig_devices" not in self.model_fields_set:
            raise ValueError("mig-devices: required when mig-enabled is true "
                             "(write 'mig-devices: {}' for MIG on with no devices)")
        if not self.mig_enabled and self.mig_devices:
            raise ValueError("mig-devices: must be empty when mig-enabled is false "
                             "(remove the devices, or set mig-enabled: true)")
        return self

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
        """Checked profiles; a compute instance the size of its GPU instance (`2c.2g.20gb`) is named as the GPU
        instance (`2g.20gb`), as go-nvlib names it, so that one layout has one name per kind of MIG device."""
        normal: dict[str, int] = {}
        for profile, count in value.items():
            match = MIG_PROFILE_PATTERN.match(profile)
            if not match:
                raise ValueError(f"{profile!r} is not a MIG profile such as '1g.10gb', '1c.2g.20gb' or '1g.10gb+me'")
            if count < 0:
                raise ValueError(f"count for {profile!r} must not be negative")
            name = profile
            if match.group(1):
                compute, gpu = int(match.group(1)[0]), int(profile.split(".", 2)[1][0])
                if compute > gpu:
                    raise ValueError(f"{profile!r}: a compute instance of {compute} slices does not fit a "
                                     f"{gpu}-slice GPU instance")
                name = profile.split(".", 1)[1] if compute == gpu else profile
            normal[name] = normal.get(name, 0) + count
        return normal


class MigPartedConfig(BaseModel):
    """A whole mig-parted config file: `version: v1` and the named layouts."""

    model_config = _STRICT

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
