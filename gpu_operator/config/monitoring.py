"""The `monitoring` section: the PrometheusRule's alert thresholds and how long a condition must hold.

```yaml
monitoring:
  enabled: true                            # the GPU dashboard ConfigMap, and the rules where they can exist
  prometheusRules: null                    # unset: where cluster.prometheusOperator says the CRDs exist
  dashboard: null                          # the Grafana dashboard ConfigMap; unset: likewise
  ruleLabels: {release: kube-prometheus}   # labels the Prometheus `ruleSelector` matches
  monitorLabels: {}                        # on the DOCA telemetry PodMonitor (podMonitorSelector); empty: ruleLabels
  thresholds:
    gpuTemperatureCelsius: 85
    memoryTemperatureCelsius: 95
    framebufferUsedRatio: 0.95
    pcieReplaysPerHour: 100
    upgradeStuckFor: 2h                    # these three need our node status exporter (agents image)
    migPendingFor: 30m
    rdmaMissingFor: 15m
```

Every threshold has a default a GPU SRE would start from; `for` durations are Prometheus durations. The
PrometheusRule is a Prometheus Operator object, so it is rendered only with `cluster.prometheusOperator`; asking
for it (`prometheusRules: true`) without that is a config error, like an enabled ServiceMonitor. The dashboard's
ConfigMap needs no CRD: unset, it comes with the Prometheus Operator (whose kube-prometheus-stack runs the Grafana
sidecar that loads it); `dashboard: true` renders it anywhere.
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
    throttle_ratio: float = Field(default=0.1, gt=0, le=1, description="share of time throttled by power/heat")
    throttle_for: PromDuration = Field(default="15m", description="how long the throttling must last")
    upgrade_stuck_for: PromDuration = Field(default="2h", description="how long a node may hold one upgrade state")
    mig_pending_for: PromDuration = Field(default="30m", description="how long a MIG change may stay pending")
    rdma_missing_for: PromDuration = Field(default="15m", description="how long an IB node may advertise no RDMA")


class MonitoringSpec(ConfigModel):
    """Alerts, recording rules and a dashboard for the GPU fleet."""

    enabled: bool = True
    prometheus_rules: bool | None = Field(
        default=None, description="render the PrometheusRule; unset follows cluster.prometheusOperator"
    )
    dashboard: bool | None = Field(
        default=None, description="render the Grafana dashboard ConfigMap; unset follows cluster.prometheusOperator"
    )
    rule_labels: dict[str, str] = Field(
        default_factory=dict, description="labels on the PrometheusRule, for the Prometheus ruleSelector"
    )
    monitor_labels: dict[str, str] = Field(
        default_factory=dict,
        description="labels on our PodMonitors, for the Prometheus podMonitorSelector; empty: ruleLabels",
    )
    thresholds: AlertThresholds = AlertThresholds()

    def rules_wanted(self, prometheus_operator: bool) -> bool:
        """Whether the PrometheusRule is rendered, given whether the Prometheus Operator's CRDs exist."""
        if not self.enabled:
            return False
        return prometheus_operator if self.prometheus_rules is None else self.prometheus_rules

    def dashboard_wanted(self, prometheus_operator: bool) -> bool:
        """Whether the Grafana dashboard ConfigMap is rendered."""
        if not self.enabled:
            return False
        return prometheus_operator if self.dashboard is None else self.dashboard
