"""The metrics the configured exporters emit: what every rule and panel may name.

The metrics exporter emits the fields of its collectors CSV (`configs.dcgmExporter` when set, else the default
selection that dcgm-exporter's `default-counters.csv` and this package's exporter share); `label`-type fields
become labels, not series. The node status exporter emits its `gpu_operator_node_*` gauges when enabled (ours adds
the gauges it reads from the Node: device plugin enabled, InfiniBand and RDMA, upgrade and MIG states), the
operator controller its remediation metrics when it runs (scraped through its ServiceMonitor) and, with
`operator.driver.rollout`, the staged rollout's, and Prometheus itself adds `up` for every target.
"""

from __future__ import annotations

from importlib import resources

from gpu_operator.config.agents import choose_implementation
from gpu_operator.config.dcgm_metrics import parse_metrics_csv
from gpu_operator.config.document import GpuStackConfig

__all__ = ["CONTROLLER_METRICS", "NODE_STATUS_AGENT_METRICS", "NODE_STATUS_METRICS", "PROMETHEUS_METRICS",
           "ROLLOUT_METRICS", "default_counters_csv", "emitted_metrics"]

#: The node status exporter's gauges (NVIDIA's names, which ours keeps).
NODE_STATUS_METRICS = frozenset(
    {
        "gpu_operator_node_metrics_ready_ts_seconds",
        "gpu_operator_node_driver_ready",
        "gpu_operator_node_toolkit_ready",
        "gpu_operator_node_plugin_ready",
        "gpu_operator_node_cuda_ready",
        "gpu_operator_node_driver_validation",
        "gpu_operator_node_driver_validation_last_success_ts_seconds",
        "gpu_operator_node_device_plugin_devices_total",
        "gpu_operator_node_device_plugin_validation_last_success_ts_seconds",
    }
)

#: What our node status exporter adds to NVIDIA's gauges (see the agent's `gauges` module).
NODE_STATUS_AGENT_METRICS = frozenset(
    {
        "gpu_operator_node_device_plugin_enabled",
        "gpu_operator_node_infiniband_present",
        "gpu_operator_node_rdma_devices_total",
        "gpu_operator_node_driver_upgrade_state",
        "gpu_operator_node_mig_config_state",
    }
)

#: The operator controller's GPU fault remediation metrics (agents/controller/metrics.py), as Prometheus stores
#: them (a counter and a histogram by their series names).
CONTROLLER_METRICS = frozenset(
    {
        "gpu_operator_remediation_quarantined_nodes",
        "gpu_operator_remediation_nodes",
        "gpu_operator_remediation_actions_total",
        "gpu_operator_remediation_detection_to_cordon_seconds_bucket",
        "gpu_operator_remediation_breaker_holding",
        "gpu_operator_remediation_breaker_deferred_nodes",
    }
)

#: The operator controller's staged driver rollout metrics (agents/controller/rollout_metrics.py), present only
#: while a rollout is configured.
ROLLOUT_METRICS = frozenset(
    {
        "gpu_operator_driver_rollout_stage_nodes",
        "gpu_operator_driver_rollout_stage_phase",
        "gpu_operator_driver_rollout_halted",
        "gpu_operator_driver_rollout_soak_remaining_seconds",
    }
)

#: Series Prometheus writes for each scrape target.
PROMETHEUS_METRICS = frozenset({"up"})


def default_counters_csv() -> str:
    """The exporter's default collectors CSV, as shipped with the metrics exporter.

    Read as package data of `gpu_operator`, so rendering does not import the agents (NVML, gRPC).
    """
    data = resources.files("gpu_operator").joinpath("agents", "metrics_exporter", "default-counters.csv")
    return data.read_text(encoding="utf-8")


def emitted_metrics(config: GpuStackConfig) -> frozenset[str]:
    """Every metric name Prometheus will hold for this config's exporters."""
    csv_text = config.configs.dcgm_exporter or default_counters_csv()
    fields = {field.field for field in parse_metrics_csv(csv_text) if field.kind != "label"}
    if config.operator.node_status_exporter.enabled:
        fields |= NODE_STATUS_METRICS
        if choose_implementation(config.agents, "nodeStatusExporter").implementation == "agents":
            fields |= NODE_STATUS_AGENT_METRICS
    if config.controller_enabled:
        fields |= CONTROLLER_METRICS
        if config.operator.driver.rollout is not None:
            fields |= ROLLOUT_METRICS
    return frozenset(fields | PROMETHEUS_METRICS)
