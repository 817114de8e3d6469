"""The mig-parted v1 model shared by the config document (`configs.migManager`) and the MIG manager agent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_operator.mig.parted import MigPartedConfig


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ({"devices": "all", "mig-enabled": True}, "mig-devices: required when mig-enabled is true"),
        ({"devices": [0], "mig-enabled": False, "mig-devices": {"1g.10gb": 7}},
         "mig-devices: must be empty when mig-enabled is false"),
    ],
)
def test_mig_enabled_and_mig_devices_must_agree(layout: dict[str, object], message: str) -> None:
    """NVIDIA/mig-parted v0.15.0 api/spec/v1/spec.go `MigConfigSpec.UnmarshalJSON`: "missing required field
    'mig-devices' when 'mig-enabled' is true" and "MIG devices included when 'mig-enabled' is false" - for the
    document's `configs.migManager` as for the file the agent reads."""
    with pytest.raises(ValidationError, match=message):
        MigPartedConfig.model_validate({"version": "v1", "mig-configs": {"a": [layout]}})


@pytest.mark.parametrize(
    "layout",
    [
        {"devices": "all", "mig-enabled": True, "mig-devices": {}},
        {"devices": "all", "mig-enabled": False},
        {"devices": "all", "mig-enabled": False, "mig-devices": {}},
    ],
)
def test_mig_on_without_devices_is_an_empty_mapping(layout: dict[str, object]) -> None:
    MigPartedConfig.model_validate({"version": "v1", "mig-configs": {"a": [layout]}})
