"""mig-parted's config file as a section of the config document (`configs.migManager`).

The model is :mod:`gpu_operator.mig.parted`, shared with the MIG manager agent; in a config document the
`version` may be left out (it can only be `v1`).
"""

from __future__ import annotations

from typing import Any, Literal

from gpu_operator.mig.parted import MIG_PROFILE_PATTERN, MigDeviceLayout
from gpu_operator.mig.parted import MigPartedConfig as MigPartedFile

__all__ = ["MigDeviceLayout", "MigPartedConfig", "MIG_PROFILE_PATTERN"]


class MigPartedConfig(MigPartedFile):
    """A whole mig-parted config: `version: v1` (the default here) and the named layouts."""

    version: Literal["v1"] = "v1"

    def to_document(self, *, exclude_defaults: bool = False) -> dict[str, Any]:
        """The config as mig-parted's file format (its own dashed keys), as every config model offers."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=exclude_defaults, exclude_none=True)
