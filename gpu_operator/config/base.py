"""The base of every config model: camelCase keys, unknown keys rejected, immutable once built.

Config documents are written by people (YAML stack config, Helm values, ClusterPolicy manifests), so every model
speaks the camelCase of the Kubernetes API on the outside while the Python side keeps snake_case attributes.
A typo is an error, never a silently ignored key, and a validated config cannot be changed afterwards.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ConfigModel"]


class ConfigModel(BaseModel):
    """Frozen pydantic model with camelCase aliases that forbids unknown keys."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=False,
        use_enum_values=True,
    )

    def to_document(self, *, exclude_defaults: bool = False) -> dict[str, Any]:
        """The model as a plain camelCase document (what a user would write)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=exclude_defaults, exclude_none=True)
