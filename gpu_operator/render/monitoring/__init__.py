"""Monitoring objects for the GPU fleet: the PrometheusRule, the Grafana dashboard, and the metrics they may read.

Pure render functions (no Pulumi): they take the config document and give Kubernetes objects as dicts.
The exporters' ServiceMonitors stay with their operands (`render/operands/dcgm_exporter.py`,
`node_status_exporter.py`), as NVIDIA creates them with the operands; this package adds what NVIDIA does not ship, and the PodMonitor of the Network Operator's DOCA telemetry service.
The PrometheusRule is rendered only where the Prometheus Operator's CRDs are known to exist
(`cluster.prometheusOperator`, or `monitoring.prometheusRules: true`, which requires it); the alerts it leaves out
are named, with what brings each back, in :func:`monitoring_notes`, which `gpu-operator render` prints. The
objects are in the form the API server stores (:mod:`gpu_operator.render.stored`).
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.render.monitoring.dashboard import dashboard_json, render_dashboard_configmap
from gpu_operator.render.monitoring.doca_telemetry import doca_telemetry_wanted, render_doca_pod_monitor
from gpu_operator.render.monitoring.exporter_fields import emitted_metrics
from gpu_operator.render.monitoring.left_out import monitoring_notes
from gpu_operator.render.monitoring.rules import RULE_NAME, render_prometheus_rule
from gpu_operator.render.stored import as_stored

__all__ = [
    "RULE_NAME",
    "dashboard_json",
    "emitted_metrics",
    "monitoring_notes",
    "monitoring_objects",
    "render_dashboard_configmap",
    "render_prometheus_rule",
]


def monitoring_objects(config: GpuStackConfig) -> list[dict[str, Any]]:
    """The monitoring objects this config asks for, in apply order (empty with `monitoring.enabled: false`)."""
    objects: list[dict[str, Any]] = []
    if config.monitoring.rules_wanted(config.cluster.prometheus_operator):
        objects.append(render_prometheus_rule(config))
    if config.monitoring.dashboard_wanted(config.cluster.prometheus_operator):
        objects.append(render_dashboard_configmap(config))
    if doca_telemetry_wanted(config):
        objects.append(render_doca_pod_monitor(config))
    return [as_stored(obj) for obj in objects]
