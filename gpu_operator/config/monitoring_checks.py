"""Rules about monitoring that span the `monitoring` and `cluster` sections.

A PrometheusRule needs the Prometheus Operator's CRDs; a render cannot look for them, so asking for the rules where
`cluster.prometheusOperator` is false is an error rather than rules silently dropped (or failing `pulumi up`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import Problem

__all__ = ["MONITORING_CHECKS"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]


def _rules_need_prometheus_operator(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.monitoring.prometheus_rules and not doc.cluster.prometheus_operator:
        yield Problem(
            "monitoring.prometheusRules",
            "a PrometheusRule needs the Prometheus Operator's CRDs (monitoring.coreos.com) and "
            "cluster.prometheusOperator is false: set cluster.prometheusOperator: true where they are installed "
            "(e.g. kube-prometheus-stack), or leave monitoring.prometheusRules unset or false",
        )


def _parts_need_monitoring(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.monitoring.enabled:
        return
    for key, asked in (("prometheusRules", doc.monitoring.prometheus_rules), ("dashboard", doc.monitoring.dashboard)):
        if asked:
            yield Problem(f"monitoring.{key}", f"monitoring.enabled is false: set it true, or drop {key}")


MONITORING_CHECKS: tuple[Check, ...] = (_rules_need_prometheus_operator, _parts_need_monitoring)
