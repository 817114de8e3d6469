"""The GPU fleet's PrometheusRule: alerts a GPU SRE acts on, and recording rules for utilisation.

The metrics each rule reads are found by parsing its PromQL; an alert whose metrics the configured exporters do
not emit (ECC double-bit errors and pending row remaps are not in the default collectors, the node-status gauges
need the node status exporter), or whose expression needs facts the config does not give (GpuLost: the pools'
GPU counts, :mod:`.gpu_lost`), is left out rather than rendered silent, and :mod:`.left_out` says so at render.
Every alert carries the conventional `summary` and `description` annotations (the description ends with what to
check next) and, with `monitoring.runbookUrl`, a `runbook_url`. The rule is labelled for the Prometheus `ruleSelector`
(`monitoring.prometheusRelease`, `ruleLabels`). Series labels are the metrics exporter's (`hostname`, `gpu`,
`UUID`); pod attribution arrives as `exported_namespace` / `exported_pod` because NVIDIA's ServiceMonitor keeps
`honorLabels: false`, so Prometheus's own target labels win.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.monitoring import AlertThresholds
from gpu_operator.render.monitoring.exporter_fields import emitted_metrics
from gpu_operator.render.monitoring.gpu_lost import gpus_below_pool
from gpu_operator.render.monitoring.promql import metric_names
from gpu_operator.render.monitoring.xid import XID_APPLICATION, XID_HARDWARE, XID_REBOOT, xid_regex

__all__ = ["ALERTS", "RULE_NAME", "Alert", "Expression", "Recording", "alerts", "expression", "recordings",
           "render_prometheus_rule"]

RULE_NAME = "gpu-operator-alerts"
_GPU = "hostname, gpu, UUID"
_REBOOT_XIDS = ", ".join(str(code) for code in XID_REBOOT)
_THRESHOLD = re.compile(r"\{t\.([a-z_]+)\}")


#: A PromQL template over the thresholds (`{t.<threshold>}`), or a builder that makes the PromQL from the config
#: (None where the config lacks what it needs).
Expression = str | Callable[[GpuStackConfig], str | None]


@dataclass(frozen=True)
class Alert:
    """One alerting rule; `for_` and the texts are templates over the thresholds, as a string `expr` is."""

    name: str
    expr: Expression
    for_: str
    severity: str
    summary: str
    description: str
    runbook: str
    """What to check next: the end of the `description` annotation."""


@dataclass(frozen=True)
class Recording:
    """One recording rule."""

    record: str
    expr: str


ALERTS: tuple[Alert, ...] = (
    Alert(
        "GpuXidHardwareError",
        f'max by ({_GPU}, err_code) (DCGM_FI_DEV_XID_ERRORS{{err_code=~"{xid_regex(XID_HARDWARE)}"}}) > 0',
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} reported hardware XID {{ $labels.err_code }}",
        "XID {{ $labels.err_code }} (GPU {{ $labels.UUID }}) is a hardware, firmware (GSP) or driver fault: "
        "the GPU needs a reset before it is trusted again, or the node a reboot (XID " + _REBOOT_XIDS + ").",
        "Cordon the node; read `dmesg | grep -i xid` on it; drain and reset the GPU (nvidia-smi -r) or reboot; "
        "if it recurs after a reset, open a hardware ticket with the GPU's serial number.",
    ),
    Alert(
        "GpuXidApplicationError",
        f'max by ({_GPU}, err_code) (DCGM_FI_DEV_XID_ERRORS{{err_code=~"{xid_regex(XID_APPLICATION)}"}}) > 0',
        "0m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} reported application XID {{ $labels.err_code }}",
        "XID {{ $labels.err_code }} is usually a fault in the workload (illegal memory access, MMU fault, "
        "software-induced stop), not in the GPU.",
        "Find the pod that ran on this GPU at the time and read its logs; rerun it with "
        "CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer. Escalate only if several workloads fail on this GPU alone.",
    ),
    Alert(
        "GpuTemperatureHigh",
        "max by (" + _GPU + ") (DCGM_FI_DEV_GPU_TEMP) > {t.gpu_temperature_celsius}",
        "{t.temperature_for}",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} is at {{ $value }} °C",
        "The GPU has stayed above {t.gpu_temperature_celsius} °C; it will throttle its clocks.",
        "Check the node's fans and airflow and the VM host's health events; compare with the other GPUs of the "
        "node; if only this GPU is hot, open a hardware ticket.",
    ),
    Alert(
        "GpuMemoryTemperatureHigh",
        "max by (" + _GPU + ") (DCGM_FI_DEV_MEMORY_TEMP) > {t.memory_temperature_celsius}",
        "{t.temperature_for}",
        "warning",
        "GPU memory on {{ $labels.hostname }} GPU {{ $labels.gpu }} is at {{ $value }} °C",
        "The GPU's memory has stayed above {t.memory_temperature_celsius} °C; memory errors become likely.",
        "Check cooling as for GpuTemperatureHigh and watch DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS for growth.",
    ),
    # Total framebuffer is used + free + reserved (the driver's own reservation); what is not free is taken.
    Alert(
        "GpuFramebufferFull",
        "max by (" + _GPU + ") (1 - DCGM_FI_DEV_FB_FREE"
        " / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED)) > {t.framebuffer_used_ratio}",
        "{t.framebuffer_for}",
        "info",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} framebuffer is {{ $value | humanizePercentage }} used",
        "The framebuffer has stayed above {t.framebuffer_used_ratio} used; the next allocation may fail with OOM.",
        "Find the pod on this GPU; check for a leak (growing usage) or a batch size too large for the GPU.",
    ),
    # A metrics CSV that does not collect the reservation: the ratio of what it shows.
    Alert(
        "GpuFramebufferFull",
        "max by (" + _GPU + ") (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) "
        "> {t.framebuffer_used_ratio}",
        "{t.framebuffer_for}",
        "info",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} framebuffer is {{ $value | humanizePercentage }} used",
        "The framebuffer has stayed above {t.framebuffer_used_ratio} used; the next allocation may fail with OOM.",
        "Find the pod on this GPU; check for a leak (growing usage) or a batch size too large for the GPU.",
    ),
    Alert(
        "GpuRowRemapFailed",
        "max by (" + _GPU + ") (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} failed to remap a memory row",
        "The GPU has no spare rows left for an uncorrectable memory error: it must be replaced.",
        "Cordon and drain the node, then open a hardware ticket naming the GPU's UUID.",
    ),
    Alert(
        "GpuRowRemapPending",
        "max by (" + _GPU + ") (DCGM_FI_DEV_ROW_REMAP_PENDING) > 0",
        "0m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} has a row remap pending",
        "A memory row remap takes effect only after the GPU is reset.",
        "Drain the node and reset the GPU (or reboot the node) at the next maintenance window.",
    ),
    Alert(
        "GpuEccDoubleBitErrors",
        "max by (" + _GPU + ") (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m])) > 0",
        "0m",
        "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} had double-bit ECC errors",
        "Uncorrectable (double-bit) ECC errors crash the workload that touched the memory.",
        "Check for a pending row remap; drain and reset the GPU; if errors recur, open a hardware ticket.",
    ),
    Alert(
        "GpuPcieReplaysGrowing",
        "max by (" + _GPU + ") (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[1h])) > {t.pcie_replays_per_hour}",
        "0m",
        "warning",
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }} is replaying PCIe packets",
        "More than {t.pcie_replays_per_hour} PCIe replays in an hour point at a bad link, riser or slot.",
        "Check `nvidia-smi -q | grep -i -A3 replay` and the link width/speed (`lspci -vv`); report the host.",
    ),
    Alert(
        "GpuMetricsExporterDown",
        'up{job="nvidia-dcgm-exporter"} == 0',
        "{t.exporter_down_for}",
        "warning",
        "GPU metrics exporter {{ $labels.pod }} is not scraped",
        "Prometheus cannot scrape the GPU metrics exporter: GPU alerts for its node are blind.",
        "`kubectl -n {{ $labels.namespace }} describe pod {{ $labels.pod }}`: look for OOMKilled or "
        "CrashLoopBackOff, then the container's logs.",
    ),
    Alert(
        "GpuLost",
        gpus_below_pool,
        "5m",
        "critical",
        "{{ $labels.hostname }} reports {{ $value }} of its {{ $labels.pool_gpus }} GPUs",
        "A node of pool {{ $labels.pool }} has {{ $labels.pool_gpus }} GPUs; the missing ones stopped reporting "
        "metrics: they fell off the bus, or the driver or the exporter lost them.",
        "Run `nvidia-smi` on the node; read `dmesg` for XID 79 or 'fallen off the bus'; drain and reboot; if a GPU "
        "is still missing after the reboot, open a hardware ticket.",
    ),
    # With our node status exporter, the device-plugin signals are read only where a device plugin is meant to
    # run (DRA pools have none); an alert listed twice is rendered in its first form whose metrics exist.
    Alert(
        "GpuNodePluginNotReady",
        "gpu_operator_node_plugin_ready == 0 and on(node) gpu_operator_node_device_plugin_enabled == 1",
        "{t.node_not_ready_for}",
        "warning",
        "Plugin is not ready on node {{ $labels.node }}",
        "The node status exporter reports the device plugin barrier closed.",
        "Read the device plugin pod's logs on the node and the nvidia-operator-validator's init containers.",
    ),
    Alert(
        "GpuDevicePluginNoDevices",
        "gpu_operator_node_device_plugin_devices_total == 0"
        " and on(node) gpu_operator_node_device_plugin_enabled == 1",
        "{t.node_not_ready_for}",
        "critical",
        "The device plugin on node {{ $labels.node }} advertises 0 GPUs",
        "Pods requesting nvidia.com/gpu cannot be scheduled on this node.",
        "Read the nvidia-device-plugin pod's logs; check the driver with `nvidia-smi`; check MIG strategy labels.",
    ),
    *(
        Alert(
            f"GpuNode{title}NotReady",
            f"{metric} == 0",
            "{t.node_not_ready_for}",
            "warning",
            f"{title} is not ready on node {{{{ $labels.node }}}}",
            f"The node status exporter reports the {what} barrier closed.",
            f"Read the {what} pod's logs on the node and the nvidia-operator-validator's init containers.",
        )
        for title, metric, what in (
            ("Driver", "gpu_operator_node_driver_ready", "driver"),
            ("Toolkit", "gpu_operator_node_toolkit_ready", "container toolkit"),
            ("Plugin", "gpu_operator_node_plugin_ready", "device plugin"),
            ("Cuda", "gpu_operator_node_cuda_ready", "CUDA"),
        )
    ),
    Alert(
        "GpuDevicePluginNoDevices",
        "gpu_operator_node_device_plugin_devices_total == 0",
        "{t.node_not_ready_for}",
        "critical",
        "The device plugin on node {{ $labels.node }} advertises 0 GPUs",
        "Pods requesting nvidia.com/gpu cannot be scheduled on this node.",
        "Read the nvidia-device-plugin pod's logs; check the driver with `nvidia-smi`; check MIG strategy labels.",
    ),
    *(
        Alert(
            f"Gpu{title}Throttling",
            f"rate(DCGM_FI_DEV_{field}_VIOLATION[5m]) / 1e9 > {{t.throttle_ratio}}",
            "{t.throttle_for}",
            "warning",
            f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.hostname }}}} is throttled by {what}",
            f"The GPU spent over {{t.throttle_ratio}} of the last 5 minutes with clocks held down by {what} limits.",
            runbook,
        )
        for title, field, what, runbook in (
            ("Power", "POWER", "power",
             "Compare DCGM_FI_DEV_POWER_USAGE with the power limit (`nvidia-smi -q -d POWER`); check that no "
             "power cap was set (`nvidia-smi -pl`) and the node's PSU and cooling; expect slower training."),
            ("Thermal", "THERMAL", "thermal",
             "Check DCGM_FI_DEV_GPU_TEMP and the node's airflow and fans; a single hot GPU points at its heatsink "
             "or fan, a hot node at the rack's cooling."),
        )
    ),
    Alert(
        "GpuDriverUpgradeFailed",
        'gpu_operator_node_driver_upgrade_state{state="upgrade-failed"} == 1',
        "5m",
        "critical",
        "The driver upgrade failed on node {{ $labels.node }}",
        "The upgrade controller marked the node upgrade-failed; it stays cordoned with the old driver or none.",
        "`kubectl describe node {{ $labels.node }}` and the events of the nvidia-driver pod on it; fix the cause, "
        "then set nvidia.com/gpu-driver-upgrade-state=upgrade-required to retry.",
    ),
    Alert(
        "GpuDriverUpgradeStuck",
        'gpu_operator_node_driver_upgrade_state{state!~"upgrade-done|upgrade-failed"} == 1',
        "{t.upgrade_stuck_for}",
        "warning",
        "The driver upgrade of node {{ $labels.node }} is stuck in {{ $labels.state }}",
        "The node has held driver upgrade state {{ $labels.state }} for over {t.upgrade_stuck_for}.",
        "By state: wait-for-jobs-required: the GPU jobs the waitForCompletion selector matches; "
        "pod-deletion-required / drain-required: a PodDisruptionBudget blocking eviction "
        "(`kubectl get pdb -A`); validation-required: the nvidia-operator-validator pod on the node.",
    ),
    Alert(
        "GpuMigReconfigurationFailed",
        'gpu_operator_node_mig_config_state{state="failed"} == 1',
        "1m",
        "critical",
        "MIG reconfiguration failed on node {{ $labels.node }}",
        "The MIG manager could not apply the node's nvidia.com/mig.config layout; the previous layout is kept.",
        "Read the node's nvidia.com/mig.config.state.reason annotation and the nvidia-mig-manager pod's logs; "
        "check that the nvidia.com/mig.config value names a layout of the mig-parted config for this GPU.",
    ),
    Alert(
        "GpuMigReconfigurationPending",
        'gpu_operator_node_mig_config_state{state=~"pending|rebooting"} == 1',
        "{t.mig_pending_for}",
        "warning",
        "MIG reconfiguration of node {{ $labels.node }} has been {{ $labels.state }} too long",
        "The node's GPU operands are paused while the MIG manager works: for over {t.mig_pending_for} now.",
        "Read the nvidia-mig-manager pod's logs on the node; look for GPU clients still holding the GPUs "
        "(`nvidia-smi`) and operand pods that did not terminate.",
    ),
    Alert(
        "GpuRemediationNeedsHuman",
        'gpu_operator_remediation_nodes{state="needs-human"} > 0',
        "0m",
        "critical",
        "{{ $value }} GPU nodes need a person",
        "The GPU fault remediation climbed to the end of a ladder (or a fault of the hardware-failure class): "
        "those nodes stay cordoned until someone acts.",
        "`gpu-operator diag` names each node, its fault (GPU UUID and PCI bus id) and why; after the repair, "
        "remove the node's nvidia.com/gpu-remediation.state label to hand it back (it is validated, then "
        "uncordoned).",
    ),
    Alert(
        "GpuRemediationBreakerHolding",
        "max by (pool) (gpu_operator_remediation_breaker_holding) == 1",
        "5m",
        "warning",
        'A GPU remediation breaker holds (pool "{{ $labels.pool }}"; "" is the cluster\'s)',
        "More nodes are quarantined than the breaker allows: new quarantines wait (state deferred) while repairs "
        "and uncordons go on; it lets go by itself when the count falls.",
        "`gpu-operator diag` for the quarantined nodes; many at once points at a cause beside the GPUs (a driver, "
        "a firmware, the rack's power or cooling) rather than at the GPUs themselves.",
    ),
    Alert(
        "GpuRemediationFailed",
        'sum by (action) (increase(gpu_operator_remediation_actions_total{result="failed"}[15m])) > 0',
        "0m",
        "warning",
        "A GPU remediation {{ $labels.action }} failed",
        "A rung of a remediation ladder failed (a drain past its deadline, a reset or a reboot that did not "
        "fix the GPU, a cloud call refused); the node climbs to its next rung.",
        "The node's Events (reason GPURemediation*) and `gpu-operator diag`; for a cloud failure the controller's "
        "log names Azure's error.",
    ),
    Alert(
        "RdmaResourcesMissing",
        "gpu_operator_node_infiniband_present == 1 and on(node) gpu_operator_node_rdma_devices_total == 0",
        "{t.rdma_missing_for}",
        "critical",
        "InfiniBand node {{ $labels.node }} advertises no RDMA devices",
        "NCCL on this node falls back to TCP (several times slower) while the job looks healthy.",
        "`kubectl get node {{ $labels.node }} -L network.nvidia.com/operator.mofed.wait`: true means MOFED is not "
        "loaded (read the mofed pod's logs); false means the RDMA device plugin found no device (its config's "
        "selectors, `kubectl -n network-operator logs ds/rdma-shared-dp-ds` or the SR-IOV plugin's).",
    ),
)

RECORDINGS: tuple[Recording, ...] = (
    Recording("hostname:gpu_utilization:avg", "avg by (hostname) (DCGM_FI_DEV_GPU_UTIL)"),
    Recording(
        "namespace:gpu_utilization:avg",
        'avg by (exported_namespace) (DCGM_FI_DEV_GPU_UTIL{exported_namespace!=""})',
    ),
    Recording(
        "pod:gpu_utilization:avg",
        'avg by (exported_namespace, exported_pod) (DCGM_FI_DEV_GPU_UTIL{exported_pod!=""})',
    ),
    Recording(
        "hostname:gpu_allocated_idle:count",
        'count by (hostname) (max_over_time(DCGM_FI_DEV_GPU_UTIL{exported_pod!=""}[30m]) == 0)',
    ),
)


def _format(template: str, thresholds: AlertThresholds) -> str:
    # Templates also hold PromQL selectors and Prometheus's `{{ $labels.x }}`: fill in only `{t.<threshold>}`.
    return _THRESHOLD.sub(lambda match: str(getattr(thresholds, match.group(1))), template)


def expression(alert: Alert, config: GpuStackConfig) -> str | None:
    """The alert's PromQL for this config (None where its builder lacks what it needs from the config)."""
    if callable(alert.expr):
        return alert.expr(config)
    return _format(alert.expr, config.monitoring.thresholds)


def alerts(config: GpuStackConfig) -> list[tuple[Alert, str]]:
    """The alerts, with their PromQL, whose metrics this config's exporters emit (of one listed twice, its first
    such form)."""
    emitted = emitted_metrics(config)
    chosen: dict[str, tuple[Alert, str]] = {}
    for alert in ALERTS:
        expr = expression(alert, config)
        if alert.name not in chosen and expr is not None and metric_names(expr) <= emitted:
            chosen[alert.name] = (alert, expr)
    return list(chosen.values())


def recordings(config: GpuStackConfig) -> list[Recording]:
    """The recording rules whose metrics this config's exporters emit."""
    emitted = emitted_metrics(config)
    return [rule for rule in RECORDINGS if metric_names(rule.expr) <= emitted]


def _alert_rule(alert: Alert, expr: str, thresholds: AlertThresholds, runbook_url: str | None) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": alert.name, "expr": expr}
    duration = _format(alert.for_, thresholds)
    if duration != "0m":
        rule["for"] = duration
    rule["labels"] = {"severity": alert.severity}
    description = _format(alert.description, thresholds)
    rule["annotations"] = {
        "summary": _format(alert.summary, thresholds),
        "description": f"{description} Next: {_format(alert.runbook, thresholds)}",
    }
    if runbook_url is not None:
        rule["annotations"]["runbook_url"] = runbook_url.replace("{alert}", alert.name)
    return rule


def render_prometheus_rule(config: GpuStackConfig) -> dict[str, Any]:
    """The PrometheusRule object (monitoring.coreos.com/v1) in the operator's namespace."""
    thresholds = config.monitoring.thresholds
    metadata: dict[str, Any] = {
        "name": RULE_NAME,
        "namespace": config.namespace,
        "labels": {"app.kubernetes.io/part-of": "gpu-operator", **config.monitoring.rule_object_labels()},
    }
    runbook_url = config.monitoring.runbook_url
    groups: list[dict[str, Any]] = [
        {"name": "gpu-operator.alerts",
         "rules": [_alert_rule(alert, expr, thresholds, runbook_url) for alert, expr in alerts(config)]},
        {
            "name": "gpu-operator.recording",
            "rules": [{"record": rule.record, "expr": rule.expr} for rule in recordings(config)],
        },
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata,
        "spec": {"groups": [group for group in groups if group["rules"]]},
    }
