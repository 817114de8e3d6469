"""The `monitoring` section: defaults, and bad thresholds as config errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.config.errors import ConfigError


def test_monitoring_is_on_with_default_thresholds() -> None:
    monitoring = parse_config({}).monitoring
    assert monitoring.enabled
    assert monitoring.thresholds.gpu_temperature_celsius == 85
    assert monitoring.thresholds.temperature_for == "5m"


@pytest.mark.parametrize(
    ("thresholds", "field"),
    [
        ({"gpuTemperatureCelsius": 500}, "gpuTemperatureCelsius"),
        ({"framebufferUsedRatio": 1.5}, "framebufferUsedRatio"),
        ({"temperatureFor": "5 minutes"}, "temperatureFor"),
        ({"gpuTemp": 80}, "gpuTemp"),
    ],
)
def test_a_bad_threshold_is_a_config_error_naming_the_field(thresholds: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"monitoring": {"thresholds": thresholds}})
    assert f"monitoring.thresholds.{field}" in str(raised.value)
