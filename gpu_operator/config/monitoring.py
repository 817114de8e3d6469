"""The `monitoring` section: the PrometheusRule's alert thresholds and how long a condition must hold.

```yaml
monitoring:
  enabled: true
  ruleLabels: {release: kube-prometheus}   # labels the Prometheus `ruleSelector` matches
  thresholds:
    gpuTemperatureCelsius: 85
    memoryTemperatureCelsius: 95
    framebufferUsedRatio: 0.95
    pcieReplaysPerHour: 100
```

Every threshold has a default a GPU SRE would start from; `for` durations are Prometheus durations.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from gpu_operator.config.base import ConfigModel

__all__ = ["AlertThresholds", "MonitoringSpec", "PromDuration"]

#: A Prometheus duration such as `5m` or `1h30m`.
PromDuration = Annotated[str, StringConstraints(pattern=r"^(([0-9]+)(y|w|d|h|m|s|ms))+$")]


class AlertThresholds(ConfigModel):
    """Where each alert starts firing."""

    gpu_temperature_celsius: int = Field(default=85, ge=30, le=120, description="GPU die temperature alert")
    memory_temperature_celsius: int = Field(default=95, ge=30, le=120, description="HBM temperature alert")
    framebuffer_used_ratio: float = Field(default=0.95, gt=0, le=1, description="used / (used + free) framebuffer")
    pcie_replays_per_hour: int = Field(default=100, ge=1, description="PCIe replay counter growth in one hour")
    temperature_for: PromDuration = Field(default="5m", description="how long a temperature must stay high")
    framebuffer_for: PromDuration = Field(default="15m", description="how long the framebuffer must stay full")
    exporter_down_for: PromDuration = Field(default="5m", description="how long an exporter may be unscrapable")
    node_not_ready_for: PromDuration = Field(default="10m", description="how long a node-status signal may be 0")


class MonitoringSpec(ConfigModel):
    """PrometheusRules for the GPU fleet (rendered only where `cluster.prometheusOperator` is true)."""

    enabled: bool = True
    rule_labels: dict[str, str] = Field(
        default_factory=dict, description="labels on the PrometheusRule, for the Prometheus ruleSelector"
    )
    thresholds: AlertThresholds = AlertThresholds()
