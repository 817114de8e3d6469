"""The network-operator Helm chart release: where it comes from, its namespace, and its values.

The chart is NVIDIA's (`network-operator` from `https://helm.ngc.nvidia.com/nvidia`, or the mirror or local copy
`network.chart` names), pinned to `network.chartVersion`. Its values change only what the RDMA wiring needs:

* `nfd.enabled: true` (the one NFD of the cluster; the GPU operator's is off) with
  `nfd.deployNodeFeatureRules: false`: the chart's Mellanox rule would also label Ethernet-only nodes, and our
  NodeFeatureRule labels InfiniBand VFs only;
* the NFD worker and the operator's DaemonSets tolerate every pool taint, besides the chart's own tolerations
  (a Helm list replaces the default list, so those are written out again);
* `network.values`, merged last, for anything else; tolerations given there are added to those above, never put
  in their place.

The namespace is labelled `privileged` for Pod Security Admission: the MOFED driver and the device plugins are
privileged host-network pods.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.effective import pool_tolerations
from gpu_operator.config.network import NETWORK_CHART
from gpu_operator.render.k8s import Object, metadata
from gpu_operator.render.helm_chart import HelmChart, merge_values

__all__ = ["network_chart", "network_namespace"]

_PSA_MODES = ("enforce", "audit", "warn")

#: The chart's default tolerations of the NFD worker and of the operator's DaemonSets (values file).
_NFD_WORKER_TOLERATIONS: tuple[Object, ...] = (
    {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
)
_OPERATOR_TOLERATIONS: tuple[Object, ...] = (
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
)


#: The toleration lists written above, which a user's `network.values` adds to.
_WRITTEN_TOLERATIONS = (("node-feature-discovery", "worker", "tolerations"), ("operator", "tolerations"))


def _with(defaults: tuple[Object, ...], extra: list[Object]) -> list[Object]:
    merged = [dict(item) for item in defaults]
    merged += [item for item in extra if item not in merged]
    return merged


def chart_values(config: GpuStackConfig) -> dict[str, Any]:
    """The chart's values for this config."""
    taints = [t.model_dump(by_alias=True, exclude_none=True) for t in pool_tolerations(config.pools)]
    values = {
        "nfd": {"enabled": True, "deployNodeFeatureRules": False},
        "node-feature-discovery": {"worker": {"tolerations": _with(_NFD_WORKER_TOLERATIONS, taints)}},
        "operator": {"tolerations": _with(_OPERATOR_TOLERATIONS, taints)},
    }
    return merge_values(values, config.network.values, union_lists=_WRITTEN_TOLERATIONS)


def network_chart(config: GpuStackConfig) -> HelmChart:
    return HelmChart(
        source=config.network.chart.locate(NETWORK_CHART),
        version=config.network.chart_version,
        namespace=config.network.namespace,
        values=chart_values(config),
    )


def network_namespace(config: GpuStackConfig) -> Object:
    labels = {f"pod-security.kubernetes.io/{mode}": "privileged" for mode in _PSA_MODES}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(config.network.namespace, labels=labels)}
