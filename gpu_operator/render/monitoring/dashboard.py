"""The GPU fleet's Grafana dashboard, built with Grafana's own SDK (`grafana-foundation-sdk`), and its ConfigMap.

Rows go from the fleet to one pod: fleet overview, nodes, GPUs, namespaces and pods (allocated against used),
memory, power, temperature, XID errors, MIG instances, the node-status signals (with our node status exporter also
the MIG and driver upgrade states), GPU fault remediation (with the operator controller: nodes quarantined by pool
and class, states, actions by result, detection-to-cordon latency, breakers), the staged driver rollout (with
`operator.driver.rollout`: whether it is halted, each soaking stage's time left, each stage's phase and its nodes
by state), and the RDMA devices of InfiniBand nodes. Every query reads `${datasource}`, a Prometheus datasource
variable, so the dashboard works on any Grafana; `$node` narrows the per-GPU rows. As with the alerts, a panel
whose metrics the configured exporters do not emit is left out.
The ConfigMap carries `grafana_dashboard: "1"`, the label Grafana's dashboard sidecar (kube-prometheus-stack's
default) watches for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import dashboard as builder
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as model

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.render.monitoring.exporter_fields import PROMETHEUS_METRICS, emitted_metrics
from gpu_operator.render.monitoring.promql import metric_names

__all__ = [
    "DASHBOARD_CONFIGMAP",
    "DASHBOARD_FILE",
    "DASHBOARD_UID",
    "SIDECAR_LABEL",
    "Panel",
    "dashboard_json",
    "panels",
    "render_dashboard_configmap",
]

DASHBOARD_UID = "gpu-operator-fleet"
DASHBOARD_CONFIGMAP = "gpu-operator-dashboard"
DASHBOARD_FILE = "gpu-operator-fleet.json"
#: The label (and value) Grafana's dashboard sidecar selects ConfigMaps by.
SIDECAR_LABEL = ("grafana_dashboard", "1")
#: Series Prometheus writes itself, beside its targets' `up`.
_PROMETHEUS_SERIES = PROMETHEUS_METRICS | {"ALERTS"}
_DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
_NODE = 'hostname=~"$node"'


@dataclass(frozen=True)
class Panel:
    """One panel: its row, kind (`stat`, `timeseries`, `state`), unit, width, (query, legend) pairs and the words
    (and colours) shown for some values."""

    row: str
    title: str
    kind: str
    unit: str
    queries: tuple[tuple[str, str], ...]
    width: int = 12
    value_words: tuple[tuple[int, str, str], ...] = ()


PANELS: tuple[Panel, ...] = (
    Panel("Fleet", "GPUs reporting", "stat", "short", (("count(DCGM_FI_DEV_GPU_TEMP)", "GPUs"),), 6),
    Panel("Fleet", "Average GPU utilisation", "stat", "percent", (("avg(DCGM_FI_DEV_GPU_UTIL)", "utilisation"),), 6),
    Panel(
        "Fleet", "GPUs allocated but idle (30 min)", "stat", "short",
        (('count(max_over_time(DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}[30m]) == 0) or vector(0)', "idle"),), 6,
    ),
    Panel(
        "Fleet", "Firing GPU alerts", "stat", "short",
        (('count(ALERTS{alertname=~"Gpu.*", alertstate="firing"}) or vector(0)', "alerts"),), 6,
    ),
    Panel("Nodes", "Utilisation by node", "timeseries", "percent",
          (("avg by (hostname) (DCGM_FI_DEV_GPU_UTIL)", "{{hostname}}"),)),
    Panel("Nodes", "GPUs reporting by node", "timeseries", "short",
          (("count by (hostname) (DCGM_FI_DEV_GPU_TEMP)", "{{hostname}}"),)),
    Panel("GPUs", "Utilisation by GPU", "timeseries", "percent",
          ((f"DCGM_FI_DEV_GPU_UTIL{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),)),
    Panel("GPUs", "Tensor core activity by GPU", "timeseries", "percentunit",
          ((f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),)),
    Panel(
        "Namespaces and pods", "GPUs allocated and used by namespace", "timeseries", "short",
        (
            ('count by (exported_namespace) (DCGM_FI_DEV_GPU_UTIL{exported_pod!=""})',
             "{{exported_namespace}} allocated"),
            ('sum by (exported_namespace) (DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}) / 100',
             "{{exported_namespace}} used"),
        ),
    ),
    Panel("Namespaces and pods", "Utilisation by pod", "timeseries", "percent",
          (('avg by (exported_namespace, exported_pod) (DCGM_FI_DEV_GPU_UTIL{exported_pod!=""})',
            "{{exported_namespace}}/{{exported_pod}}"),)),
    Panel(
        "Memory", "Framebuffer used", "timeseries", "decmbytes",
        ((f"DCGM_FI_DEV_FB_USED{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),),
    ),
    Panel(
        "Memory", "Framebuffer used ratio", "timeseries", "percentunit",
        ((f"DCGM_FI_DEV_FB_USED{{{_NODE}}} / (DCGM_FI_DEV_FB_USED{{{_NODE}}} + DCGM_FI_DEV_FB_FREE{{{_NODE}}}"
          f" + DCGM_FI_DEV_FB_RESERVED{{{_NODE}}})",
          "{{hostname}} GPU {{gpu}}"),),
    ),
    Panel("Power", "Power draw", "timeseries", "watt",
          ((f"DCGM_FI_DEV_POWER_USAGE{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),)),
    Panel("Power", "Energy per hour", "timeseries", "kwatth",
          ((f"increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{_NODE}}}[1h]) / 3.6e9", "{{hostname}} GPU {{gpu}}"),)),
    Panel("Temperature", "GPU temperature", "timeseries", "celsius",
          ((f"DCGM_FI_DEV_GPU_TEMP{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),)),
    Panel("Temperature", "Memory temperature", "timeseries", "celsius",
          ((f"DCGM_FI_DEV_MEMORY_TEMP{{{_NODE}}}", "{{hostname}} GPU {{gpu}}"),)),
    Panel("XID errors", "Last XID by GPU", "state", "short",
          ((f"DCGM_FI_DEV_XID_ERRORS{{{_NODE}}}", "{{hostname}} GPU {{gpu}} XID {{err_code}}"),), 24),
    Panel("MIG", "MIG instances by profile", "timeseries", "short",
          (('count by (hostname, GPU_I_PROFILE) (DCGM_FI_DEV_FB_USED{GPU_I_PROFILE!=""})',
            "{{hostname}} {{GPU_I_PROFILE}}"),)),
    Panel("MIG", "MIG instance utilisation", "timeseries", "percentunit",
          (('DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!=""}', "{{hostname}} GPU {{gpu}} {{GPU_I_PROFILE}}"),)),
    Panel(
        "Node status", "Operand readiness", "state", "short",
        tuple((f"{metric}", f"{{{{instance}}}} {what}") for metric, what in (
            ("gpu_operator_node_driver_ready", "driver"),
            ("gpu_operator_node_toolkit_ready", "toolkit"),
            ("gpu_operator_node_plugin_ready", "device plugin"),
            ("gpu_operator_node_cuda_ready", "CUDA"),
        )),
    ),
    Panel("Node status", "GPUs advertised by the device plugin", "timeseries", "short",
          (("gpu_operator_node_device_plugin_devices_total", "{{instance}}"),)),
    # From our node status exporter, which reads them off the Node.
    Panel("Node status", "MIG reconfiguration state", "state", "short",
          (("gpu_operator_node_mig_config_state == 1", "{{node}} {{state}}"),)),
    Panel("Node status", "Driver upgrade state", "state", "short",
          (("gpu_operator_node_driver_upgrade_state == 1", "{{node}} {{state}}"),)),
    # From the operator controller, when it runs: GPU fault remediation.
    Panel("Remediation", "Nodes quarantined by pool and fault class", "timeseries", "short",
          (("sum by (pool, fault_class) (gpu_operator_remediation_quarantined_nodes)", "{{pool}} {{fault_class}}"),)),
    Panel("Remediation", "Nodes by remediation state", "timeseries", "short",
          (('gpu_operator_remediation_nodes{state!="healthy"}', "{{state}}"),)),
    Panel("Remediation", "Remediation actions by result (1 h)", "timeseries", "short",
          (("sum by (action, result) (increase(gpu_operator_remediation_actions_total[1h]))",
            "{{action}} {{result}}"),)),
    Panel("Remediation", "Detection to cordon, p99", "timeseries", "s",
          (("histogram_quantile(0.99, sum by (le) "
            "(rate(gpu_operator_remediation_detection_to_cordon_seconds_bucket[15m])))", "p99"),)),
    Panel("Remediation", "Breakers holding", "state", "short",
          (("gpu_operator_remediation_breaker_holding", "{{pool}}"),), 24),
    # From the operator controller, with a staged driver rollout: the gate's view, per stage.
    Panel("Driver rollout", "Rollout", "stat", "short", (("max(gpu_operator_driver_rollout_halted)", "rollout"),), 6,
          ((0, "running", "green"), (1, "halted", "red"))),
    Panel("Driver rollout", "Soak time left by stage", "stat", "s",
          (("max by (stage) (gpu_operator_driver_rollout_soak_remaining_seconds)", "{{stage}}"),), 6),
    Panel("Driver rollout", "Phase by stage", "state", "short",
          (("max by (stage, phase) (gpu_operator_driver_rollout_stage_phase) == 1", "{{stage}} {{phase}}"),)),
    Panel("Driver rollout", "Nodes by state per stage", "timeseries", "short",
          (("max by (stage, state) (gpu_operator_driver_rollout_stage_nodes)", "{{stage}} {{state}}"),), 24),
    Panel("RDMA", "RDMA devices advertised on InfiniBand nodes", "timeseries", "short",
          (("gpu_operator_node_rdma_devices_total and on(node) gpu_operator_node_infiniband_present == 1",
            "{{node}}"),), 24),
)

_BUILDERS = {"stat": stat.Panel, "timeseries": timeseries.Panel, "state": statetimeline.Panel}
_HEIGHT = 8


def panels(config: GpuStackConfig) -> list[Panel]:
    """The panels whose every query reads only metrics this config's exporters (or Prometheus) give."""
    available = emitted_metrics(config) | _PROMETHEUS_SERIES
    return [
        panel for panel in PANELS
        if all(metric_names(query) <= available for query, _ in panel.queries)
    ]


def _panel(panel: Panel, panel_id: int) -> Any:
    built = (
        _BUILDERS[panel.kind]()
        .id(panel_id)
        .title(panel.title)
        .unit(panel.unit)
        .datasource(_DATASOURCE)
        .height(_HEIGHT)
        .span(panel.width)
    )
    if panel.value_words:
        built = built.mappings([model.ValueMap({
            str(value): model.ValueMappingResult(text=text, color=color, index=index)
            for index, (value, text, color) in enumerate(panel.value_words)})])
    for index, (query, legend) in enumerate(panel.queries):
        built = built.with_target(
            prometheus.Dataquery().expr(query).legend_format(legend).ref_id(chr(ord("A") + index))
        )
    return built


def _build(config: GpuStackConfig) -> model.Dashboard:
    board = (
        builder.Dashboard("GPU fleet")
        .uid(DASHBOARD_UID)
        .tags(["gpu", "nvidia", "gpu-operator"])
        .description("NVIDIA GPUs of the cluster: utilisation, memory, power, temperature, XID errors, MIG, "
                     "operand readiness (gpu-operator)")
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(builder.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            builder.QueryVariable("node")
            .label("Node")
            .datasource(_DATASOURCE)
            .query("label_values(DCGM_FI_DEV_GPU_TEMP, hostname)")
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
            .all_value(".*")
        )
    )
    rows: dict[str, list[Panel]] = {}
    for panel in panels(config):
        rows.setdefault(panel.row, []).append(panel)
    panel_id = 0
    for title, members in rows.items():
        panel_id += 1
        row = builder.Row(title).id(panel_id)
        board = board.with_row(row)
        for panel in members:
            panel_id += 1
            board = board.with_panel(_panel(panel, panel_id))
    return board.build()


def dashboard_json(config: GpuStackConfig) -> str:
    """The dashboard as Grafana's JSON model (sorted keys, so the text is stable)."""
    return json.dumps(_build(config), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"


def render_dashboard_configmap(config: GpuStackConfig) -> dict[str, Any]:
    """The dashboard's ConfigMap, labelled for Grafana's dashboard sidecar."""
    key, value = SIDECAR_LABEL
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_CONFIGMAP,
            "namespace": config.namespace,
            "labels": {key: value, "app.kubernetes.io/part-of": "gpu-operator"},
        },
        "data": {DASHBOARD_FILE: dashboard_json(config)},
    }
