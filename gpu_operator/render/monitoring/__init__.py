"""Monitoring objects for the GPU fleet: the PrometheusRule and the metrics the exporters emit.

Pure render functions (no Pulumi): they take the config document and give Kubernetes objects as dicts.
"""

from __future__ import annotations

from gpu_operator.render.monitoring.exporter_fields import emitted_metrics
from gpu_operator.render.monitoring.rules import RULE_NAME, render_prometheus_rule

__all__ = ["RULE_NAME", "emitted_metrics", "render_prometheus_rule"]
