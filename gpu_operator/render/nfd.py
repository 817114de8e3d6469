"""Node Feature Discovery, as NVIDIA's chart deploys it: chart values and the kernel-module NodeFeatureRule.

NVIDIA's chart installs NFD as a subchart so that GPU nodes get `feature.node.kubernetes.io/pci-10de.present`
(PCI devices of classes 02/03 labelled by vendor) and so that GPU feature discovery may publish `nvidia.com/*`
labels (`extraLabelNs`). We install the same chart (`oci://registry.k8s.io/nfd/charts/node-feature-discovery`,
or the mirror or local copy `nfd.chart` names) with the same values (`nfd.values`, whose default is NVIDIA's);
the NFD worker also tolerates every taint the operands tolerate (`daemonsets.tolerations`), so it runs on tainted
GPU pools.

With `nfd.nodefeaturerules`, the NodeFeatureRule `nvidia-kernel-modules` labels nodes by the NVIDIA kernel
modules loaded there: `gdrdrv` (GDRCopy), `nvidia_fs` (GPUDirect Storage) and `nvidia_peermem` (GPUDirect RDMA),
as NVIDIA's chart labels them (`nvidia.com/gdrcopy.capable`, `nvidia.com/gds.capable`,
`nvidia.com/peermem.capable` = true), so workloads can target nodes where those drivers run.
"""

from __future__ import annotations

import copy
from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.document import NFD_CHART
from gpu_operator.render.k8s import Object, metadata
from gpu_operator.render.helm_chart import HelmChart

__all__ = ["nfd_chart", "node_feature_rules", "KERNEL_MODULE_LABELS", "RULE_NAME"]

RULE_NAME = "nvidia-kernel-modules"

#: kernel module → the node label it sets
KERNEL_MODULE_LABELS: dict[str, str] = {
    "gdrdrv": "nvidia.com/gdrcopy.capable",
    "nvidia_fs": "nvidia.com/gds.capable",
    "nvidia_peermem": "nvidia.com/peermem.capable",
}


def _worker_tolerates_the_operands_taints(values: dict[str, Any], config: GpuStackConfig) -> dict[str, Any]:
    values = copy.deepcopy(values)
    tolerations = values.setdefault("worker", {}).setdefault("tolerations", [])
    for toleration in config.operator.daemonsets.tolerations:
        item = toleration.model_dump(by_alias=True, exclude_none=True)
        if item not in tolerations:
            tolerations.append(item)
    return values


def nfd_chart(config: GpuStackConfig) -> HelmChart | None:
    """The NFD chart to install, or None when `nfd.enabled` is false."""
    if not config.nfd.enabled:
        return None
    return HelmChart(
        source=config.nfd.chart.locate(NFD_CHART),
        version=config.nfd.chart_version,
        namespace=config.namespace,
        values=_worker_tolerates_the_operands_taints(config.nfd.values, config),
    )


def _module_rule(module: str, label: str) -> Object:
    return {
        "name": f"kernel-module-{module}",
        "labels": {label: "true"},
        "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": {module: {"op": "Exists"}}}],
    }


def node_feature_rules(config: GpuStackConfig) -> list[Object]:
    """The kernel-module NodeFeatureRule when `nfd.nodefeaturerules` is set."""
    if not config.nfd.node_feature_rules:
        return []
    rules = [_module_rule(module, label) for module, label in KERNEL_MODULE_LABELS.items()]
    return [{
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": metadata(RULE_NAME),
        "spec": {"rules": rules},
    }]
