"""The `monitoring` section: which Prometheus loads our monitors and rules, the alert thresholds, runbook links.

```yaml
monitoring:
  enabled: true                            # the GPU dashboard ConfigMap, and the rules where they can exist
  prometheusRules: null                    # unset: where cluster.prometheusOperator says the CRDs exist
  dashboard: null                          # the Grafana dashboard ConfigMap; unset: likewise
  prometheusRelease: kube-prometheus       # the kube-prometheus-stack Helm release; null: label by the maps below
  ruleLabels: {}                           # more labels on the PrometheusRule (for a custom `ruleSelector`)
  monitorLabels: {}                        # more labels on our ServiceMonitors / PodMonitors; empty: ruleLabels
  runbookUrl: null                         # e.g. https://wiki.example.com/gpu/{alert}: each alert's runbook_url
  thresholds:
    gpuTemperatureCelsius: 85
    memoryTemperatureCelsius: 95
    framebufferUsedRatio: 0.95
    pcieReplaysPerHour: 100
    upgradeStuckFor: 2h                    # these three need our node status exporter (agents image)
    migPendingFor: 30m
    rdmaMissingFor: 15m
```

A stock kube-prometheus-stack selects ServiceMonitors, PodMonitors and PrometheusRules by the label
`release: <its Helm release name>` (its `*SelectorNilUsesHelmValues: true` defaults), so every monitor and rule
we render carries `release: <prometheusRelease>`. The default is the release name of Azure's RDMA/InfiniBand
setup for AKS (`kube-prometheus`); set yours, or `null` where your Prometheus selects by other labels
(`ruleLabels` / `monitorLabels`), or selects everything. `gpu-operator check` names every monitor or rule whose
labels the selector would not match.

Every threshold has a default a GPU SRE would start from; `for` durations are Prometheus durations. The
PrometheusRule is a Prometheus Operator object, so it is rendered only with `cluster.prometheusOperator`; asking
for it (`prometheusRules: true`) without that is a config error, like an enabled ServiceMonitor. The dashboard's
ConfigMap needs no CRD: unset, it comes with the Prometheus Operator (whose kube-prometheus-stack runs the Grafana
sidecar that loads it); `dashboard: true` renders it anywhere.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from gpu_operator.config.base import ConfigModel

__all__ = ["AlertThresholds", "DEFAULT_PROMETHEUS_RELEASE", "MonitoringSpec", "PromDuration"]

#: The kube-prometheus-stack release name Azure's aks-rdma-infiniband setup installs (`deploy-aks.sh`).
DEFAULT_PROMETHEUS_RELEASE = "kube-prometheus"
#: A Helm release name (what `release: {{ .Release.Name }}` puts in the selector).
_RELEASE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")

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
    prometheus_release: str | None = Field(
        default=DEFAULT_PROMETHEUS_RELEASE,
        description="the kube-prometheus-stack release: `release: <it>` on every monitor and rule; null: none",
    )
    rule_labels: dict[str, str] = Field(
        default_factory=dict, description="more labels on the PrometheusRule, for the Prometheus ruleSelector"
    )
    monitor_labels: dict[str, str] = Field(
        default_factory=dict,
        description="more labels on our ServiceMonitors and PodMonitors; empty: ruleLabels",
    )
    runbook_url: str | None = Field(
        default=None, description="a URL template with {alert}: each alert's runbook_url annotation"
    )
    thresholds: AlertThresholds = AlertThresholds()

    @field_validator("prometheus_release")
    @classmethod
    def _release(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > 53 or not _RELEASE.match(value)):
            raise ValueError(f"{value!r} is not a Helm release name (lower-case letters, digits and '-', at most "
                             "53): give the name your kube-prometheus-stack was installed under, e.g. "
                             "`helm list -A | grep kube-prometheus-stack`")
        return value

    @field_validator("runbook_url")
    @classmethod
    def _runbook(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("https://", "http://")) or "{alert}" not in value:
            raise ValueError(f"{value!r} is not a runbook URL template: give an http(s) URL with {{alert}} where "
                             "the alert's name goes, e.g. https://wiki.example.com/gpu/{alert}")
        if value.replace("{alert}", "").count("{") or value.replace("{alert}", "").count("}"):
            raise ValueError(f"{value!r}: only {{alert}} may appear in braces")
        return value

    def selector_labels(self) -> dict[str, str]:
        """What the Prometheus this stack names selects monitors and rules by (empty: not known)."""
        if self.prometheus_release is not None:
            return {"release": self.prometheus_release}
        return dict(self.monitor_labels or self.rule_labels)

    def rule_object_labels(self) -> dict[str, str]:
        """The labels the PrometheusRule carries for the selector (before its own `app.kubernetes.io` label)."""
        release = {"release": self.prometheus_release} if self.prometheus_release is not None else {}
        return {**release, **self.rule_labels}

    def monitor_object_labels(self) -> dict[str, str]:
        """The labels every ServiceMonitor and PodMonitor we render carries for the selector."""
        release = {"release": self.prometheus_release} if self.prometheus_release is not None else {}
        return {**release, **(self.monitor_labels or self.rule_labels)}

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
