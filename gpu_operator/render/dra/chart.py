"""The dra-driver-nvidia-gpu Helm release: chart, pinned version, namespace and values.

The chart (`oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu`, 0.4.1, or the mirror or local
copy of that version `dra.chart` names) brings the controller,
the kubelet plugin DaemonSet, RBAC, the DeviceClasses and the ComputeDomain CRDs. Its values change only what the
stack decides:

* `resources.gpus.enabled` / `resources.computeDomains.enabled` from `dra.gpus` / `dra.computeDomains`, and
  `gpuResourcesEnabledOverride: true` with GPUs: the chart refuses GPUs otherwise, because the device plugin must
  be off on the same nodes, which the pools' `nvidia.com/gpu.deploy.device-plugin=false` guarantees;
* `nvidiaDriverRoot`: `dra.driverRoot`, else the operator's `hostPaths.driverInstallDir` (`/run/nvidia/driver`)
  when the operator installs the driver, `/` when the host (or AKS) brings it;
* `resourceApiVersion: resource.k8s.io/v1` (the config requires Kubernetes 1.34), instead of the chart guessing
  from the API versions Helm sees;
* the kubelet plugin only on nodes labelled `nvidia.com/dra-kubelet-plugin=true`, tolerating the chart's own
  toleration plus every taint the operands tolerate (a Helm list replaces the default list), with the kubelet
  directories under `hostPaths.kubeletRootDir`;
* `dra.values`, merged last, for anything else; kubelet-plugin tolerations given there are added to those above,
  never put in their place.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import DRA_CHART
from gpu_operator.facts.dra_driver import DRA_NODE_LABEL
from gpu_operator.render.helm_chart import HelmChart, merge_values

__all__ = ["dra_chart", "chart_values", "driver_root"]

#: The chart's default kubelet-plugin toleration (values.yaml).
_PLUGIN_TOLERATIONS: tuple[dict[str, str], ...] = ({"key": "nvidia.com/gpu", "operator": "Exists",
                                                     "effect": "NoSchedule"},)


def driver_root(config: GpuStackConfig) -> str:
    """Where the DRA driver finds the NVIDIA driver on the host."""
    if config.dra.driver_root is not None:
        return config.dra.driver_root
    # pools with the AKS-managed driver require operator.driver.enabled: false, so they land on "/"
    return config.operator.host_paths.driver_install_dir if config.operator.driver.enabled else "/"


def chart_values(config: GpuStackConfig) -> dict[str, Any]:
    """The chart's values for this config."""
    dra = config.dra
    tolerations = [dict(t) for t in _PLUGIN_TOLERATIONS]
    for toleration in config.operator.daemonsets.tolerations:
        item = toleration.model_dump(by_alias=True, exclude_none=True)
        if item not in tolerations:
            tolerations.append(item)
    kubelet = config.operator.host_paths.kubelet_root_dir.rstrip("/")
    values: dict[str, Any] = {
        "nvidiaDriverRoot": driver_root(config),
        "resourceApiVersion": "resource.k8s.io/v1",
        "resources": {"gpus": {"enabled": dra.gpus}, "computeDomains": {"enabled": dra.compute_domains}},
        "kubeletPlugin": {
            "nodeSelector": {DRA_NODE_LABEL: "true"},
            "tolerations": tolerations,
            "kubeletRegistrarDirectoryPath": f"{kubelet}/plugins_registry",
            "kubeletPluginsDirectoryPath": f"{kubelet}/plugins",
        },
    }
    if dra.gpus:
        values["gpuResourcesEnabledOverride"] = True
    return merge_values(values, dra.values, union_lists=(("kubeletPlugin", "tolerations"),))


def dra_chart(config: GpuStackConfig) -> HelmChart:
    return HelmChart(source=config.dra.chart.locate(DRA_CHART), version=DRA_CHART.version,
                     namespace=config.dra.namespace, values=chart_values(config))
