"""`GpuMonitoring`: the GPU fleet's alerting and recording rules and Grafana dashboard, on a Kubernetes provider.

The objects come from :func:`gpu_operator.render.monitoring.monitoring_objects`; this component only registers
them. The PrometheusRule exists only where `cluster.prometheusOperator` says the Prometheus Operator's CRDs are
installed; the dashboard is a ConfigMap labelled for Grafana's sidecar (`grafana_dashboard: "1"`). The
exporters' ServiceMonitors are created by `GpuOperator` with their operands, as NVIDIA does. Give it
`depends_on=[operator]` (GpuCluster does) so the rules arrive with the exporters they read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.component_args import required
from gpu_operator.components.kubernetes_objects import register_object
from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.render.monitoring import monitoring_objects

__all__ = ["GpuMonitoring", "GpuMonitoringArgs", "TOKEN"]

TOKEN = "gpu-operator:index:GpuMonitoring"


class GpuMonitoringArgs(TypedDict):
    """Inputs of a GpuMonitoring."""

    config: GpuStackConfig | Mapping[str, Any]
    """The config document; its `monitoring` section and `cluster.prometheusOperator`."""
    provider: k8s.Provider
    """The Kubernetes provider of the target cluster."""


class GpuMonitoring(pulumi.ComponentResource):
    """The GPU PrometheusRule (alerts with runbooks, utilisation recording rules) and dashboard ConfigMap."""

    objects: list[pulumi.CustomResource]
    alert_names: pulumi.Output[list[str]]
    """The alerts the rule defines (those whose metrics the configured exporters emit)."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"GpuMonitoring({name!r})"
        provider = required(args, "provider", k8s.Provider, where, "a pulumi_kubernetes.Provider for the cluster")
        config = parse_config(required(args, "config", (GpuStackConfig, Mapping), where, "the config document"))
        rendered = monitoring_objects(config)
        if not rendered:
            raise ConfigError([Problem("monitoring.enabled", "there is nothing to monitor with for this config "
                                                             "(monitoring.enabled: false, or no Prometheus Operator "
                                                             "in cluster.prometheusOperator); set monitoring.enabled "
                                                             "and cluster.prometheusOperator: true, or do not create "
                                                             "a GpuMonitoring")])
        super().__init__(TOKEN, name, {}, opts)
        # A component's depends_on does not reach its children: hand it to each object.
        after = opts.depends_on if opts is not None else None
        deleted_with = opts.deleted_with if opts is not None else None
        options = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=after, deleted_with=deleted_with)
        self.objects = [register_object(name, obj, options) for obj in rendered]
        alerts = [
            rule["alert"]
            for obj in rendered if obj["kind"] == "PrometheusRule"
            for group in obj["spec"]["groups"] for rule in group["rules"] if "alert" in rule
        ]
        self.alert_names = pulumi.Output.from_input(alerts)
        self.register_outputs({"alertNames": self.alert_names})
