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


@pytest.mark.parametrize(
    ("document", "wanted"),
    [
        ({}, False),
        ({"cluster": {"prometheusOperator": True}}, True),
        ({"cluster": {"prometheusOperator": True}, "monitoring": {"prometheusRules": False}}, False),
        ({"cluster": {"prometheusOperator": True}, "monitoring": {"enabled": False}}, False),
    ],
)
def test_the_rules_follow_the_prometheus_operator_unless_set(document: dict[str, Any], wanted: bool) -> None:
    config = parse_config(document)
    assert config.monitoring.rules_wanted(config.cluster.prometheus_operator) is wanted


@pytest.mark.parametrize(
    "monitoring",
    [{"prometheusRules": True}, {"prometheusRules": True, "enabled": False}],
)
def test_asking_for_rules_that_cannot_be_created_is_an_error(monitoring: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"monitoring": monitoring})
    assert "monitoring.prometheusRules" in str(raised.value)
