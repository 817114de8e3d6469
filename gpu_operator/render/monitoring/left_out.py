"""The alerts a render leaves out, and the setting that brings each back: said at render, never silently missing.

An alert is left out of the PrometheusRule when it reads a metric the configured exporters do not emit, or needs
facts the config does not give (:mod:`.rules`). With NVIDIA's default collectors that is the ECC double-bit and
pending-row-remap alerts (`DCGM_FI_DEV_ECC_DBE_VOL_TOTAL` is commented out of dcgm-exporter's
`default-counters.csv` and `DCGM_FI_DEV_ROW_REMAP_PENDING` is not in it) and the throttling alerts (the violation
counters are commented out too); without the node status exporter, its readiness alerts; without ours, the
upgrade, MIG and RDMA state alerts; without pools, GpuLost. `gpu-operator render` prints one note per remedy.
Of an alert listed in several forms, the form that lacks the least is the one the note speaks of.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpu_operator.config.agents import choose_implementation
from gpu_operator.config.dcgm_metrics import AGENT_READABLE_FIELDS
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.render.monitoring.exporter_fields import CONTROLLER_METRICS, NODE_STATUS_AGENT_METRICS, emitted_metrics
from gpu_operator.render.monitoring.promql import metric_names
from gpu_operator.render.monitoring.rules import ALERTS, Alert, alerts, expression

__all__ = ["LeftOut", "left_out_alerts", "monitoring_notes"]

#: What an alert lacks when its expression cannot be built: the pools' GPU counts (GpuLost).
_POOLS = "pools"
_CSV = "configs.dcgmExporter (the whole CSV the exporter collects, mounted through operator.dcgmExporter.config.name)"


@dataclass(frozen=True)
class LeftOut:
    """Alerts left out for one reason, each with the DCGM fields it lacks (if any), and what brings them back."""

    alerts: Mapping[str, tuple[str, ...]]
    reason: str
    remedy: str

    def note(self) -> str:
        named = [f"{name} ({', '.join(fields)})" if fields else name for name, fields in self.alerts.items()]
        return f"the PrometheusRule leaves out {', '.join(named)}: {self.reason}; {self.remedy}"


def _lacking(alert: Alert, config: GpuStackConfig, emitted: frozenset[str]) -> frozenset[str]:
    expr = expression(alert, config)
    return frozenset({_POOLS}) if expr is None else metric_names(expr) - emitted


def _least_lacking(forms: Iterable[frozenset[str]]) -> frozenset[str]:
    # the last form listed is the most modest fallback: it wins a tie
    return min(reversed(list(forms)), key=len)


def _dcgm_group(config: GpuStackConfig, fields: frozenset[str]) -> tuple[str, str]:
    """(reason, remedy) for alerts reading DCGM fields the collectors list leaves out."""
    ours = choose_implementation(config.agents, "dcgmExporter").implementation == "agents"
    if ours and not fields <= AGENT_READABLE_FIELDS:
        return ("our metrics exporter cannot read them",
                f"run NVIDIA's dcgm-exporter (agents.overrides: {{dcgmExporter: nvidia}}) and list them in {_CSV}")
    return "the exporter's metrics CSV does not collect them", f"list those fields in {_CSV}"


def _group(config: GpuStackConfig, lacking: frozenset[str]) -> tuple[str, str]:
    """(reason, remedy) for one alert's lacking metrics or facts."""
    if _POOLS in lacking:
        return ("it compares each node's GPUs with its pool's and the config describes no GPU pool",
                "describe the AKS GPU pools under pools (their VM sizes give each node's GPU count)")
    fields = frozenset(name for name in lacking if name.startswith("DCGM_"))
    if fields:
        return _dcgm_group(config, fields)
    if lacking & CONTROLLER_METRICS:
        return ("they read the operator controller's remediation metrics and no controller runs",
                "set agents.image or agents.build (and leave controller.enabled on)")
    enable = "set operator.nodeStatusExporter.enabled: true"
    if not lacking & NODE_STATUS_AGENT_METRICS:
        return "they read the node status exporter's gauges", enable
    steps = [] if config.operator.node_status_exporter.enabled else [enable]
    choice = choose_implementation(config.agents, "nodeStatusExporter")
    if choice.implementation != "agents":
        steps.append(f"run ours rather than NVIDIA's (now NVIDIA's: {choice.reason})")
    return "they read the Node's labels and capacity, which only our node status exporter reports", " and ".join(steps)


def left_out_alerts(config: GpuStackConfig) -> list[LeftOut]:
    """The alerts the PrometheusRule of this config leaves out, grouped by what brings them back, in rule order."""
    emitted = emitted_metrics(config)
    rendered = {alert.name for alert, _ in alerts(config)}
    forms: dict[str, list[frozenset[str]]] = {}
    for alert in ALERTS:
        if alert.name not in rendered:
            forms.setdefault(alert.name, []).append(_lacking(alert, config, emitted))
    groups: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for name, lacks in forms.items():
        lacking = _least_lacking(lacks)
        fields = tuple(sorted(field for field in lacking if field.startswith("DCGM_")))
        groups.setdefault(_group(config, lacking), {})[name] = fields
    return [LeftOut(alerts, reason, remedy) for (reason, remedy), alerts in groups.items()]


def monitoring_notes(config: GpuStackConfig) -> list[str]:
    """What `gpu-operator render` says about the alerts it leaves out (nothing where no PrometheusRule is rendered)."""
    if not config.monitoring.rules_wanted(config.cluster.prometheus_operator):
        return []
    return [group.note() for group in left_out_alerts(config)]
