"""The PodMonitor of NVIDIA's DOCA telemetry service, when the Network Operator runs it.

DTS (`docaTelemetryService` in the NicClusterPolicy) runs as DaemonSet `doca-telemetry-service` in the Network
Operator's namespace, pods labelled `app.kubernetes.io/name: doca-telemetry`, with host networking and its
Prometheus endpoint on port 9189 (the ConfigMap's `dts_config_map.ini`). It has no Service, so Prometheus finds it
through a PodMonitor; the container declares no named port, hence `portNumber`. Rendered only where the Prometheus
Operator's CRDs exist (`cluster.prometheusOperator`), labelled for the Prometheus `podMonitorSelector`:
`release: <monitoring.prometheusRelease>` and `monitoring.monitorLabels` (falling back to `monitoring.ruleLabels`).
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.network import network_wanted

__all__ = ["DTS_LABELS", "DTS_PORT", "PODMONITOR_NAME", "doca_telemetry_wanted", "render_doca_pod_monitor"]

PODMONITOR_NAME = "doca-telemetry-service"
DTS_LABELS = {"app.kubernetes.io/name": "doca-telemetry"}
DTS_PORT = 9189


def doca_telemetry_wanted(config: GpuStackConfig) -> bool:
    """The network operator runs DTS and Prometheus Operator CRDs exist to scrape it with."""
    return (config.monitoring.enabled and config.cluster.prometheus_operator
            and network_wanted(config.network, config.pools) and config.network.doca_telemetry)


def render_doca_pod_monitor(config: GpuStackConfig) -> dict[str, Any]:
    monitoring = config.monitoring
    labels = {"app.kubernetes.io/part-of": "gpu-operator", **monitoring.monitor_object_labels()}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": PODMONITOR_NAME, "namespace": config.network.namespace, "labels": labels},
        "spec": {
            "jobLabel": "app.kubernetes.io/name",
            "namespaceSelector": {"matchNames": [config.network.namespace]},
            "selector": {"matchLabels": dict(DTS_LABELS)},
            "podMetricsEndpoints": [{
                "portNumber": DTS_PORT,
                "path": "/metrics",
                "interval": "30s",
                "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}],
            }],
        },
    }
