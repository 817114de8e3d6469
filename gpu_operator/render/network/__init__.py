"""The Network Operator's objects for InfiniBand pools, in the order they have to be applied.

1. the namespace (PSA `privileged`) and the network-operator chart (:mod:`.chart`);
2. the NodeFeatureRule that labels InfiniBand nodes (:mod:`.node_feature_rule`), once the chart's NFD CRDs exist;
3. the NicClusterPolicy (:mod:`.nic_cluster_policy`), once the operator's CRDs exist;
4. the IPoIB network and its IPPool (:mod:`.ipoib`), when asked for.

The GPU operator comes after all of them, so its driver never starts before MOFED is being installed. Pure
functions: no Pulumi, no network access. The objects are in the form the API server stores
(:mod:`gpu_operator.render.stored`); the chart's values get that form where the chart is registered.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.network import network_wanted
from gpu_operator.render.k8s import Object
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.network.chart import network_chart, network_namespace
from gpu_operator.render.network.ipoib import ipoib_objects
from gpu_operator.render.network.nic_cluster_policy import nic_cluster_policy
from gpu_operator.render.network.node_feature_rule import node_feature_rule
from gpu_operator.render.stored import as_stored

__all__ = ["NetworkRender", "network_objects", "network_summary", "render_network"]


@dataclass(frozen=True)
class NetworkRender:
    """Everything the Network Operator component registers, by apply step."""

    namespace: Object
    chart: HelmChart
    node_feature_rule: Object
    nic_cluster_policy: Object
    ipoib: tuple[Object, ...]

    @property
    def objects(self) -> list[Object]:
        """The plain objects (not the chart), in apply order."""
        return [self.namespace, self.node_feature_rule, self.nic_cluster_policy, *self.ipoib]


def render_network(config: GpuStackConfig) -> NetworkRender | None:
    """The Network Operator's objects, or None when `network.enabled` resolved to false."""
    if not network_wanted(config.network, config.pools):
        return None
    return NetworkRender(
        namespace=as_stored(network_namespace(config)),
        chart=network_chart(config),
        node_feature_rule=as_stored(node_feature_rule(config)),
        nic_cluster_policy=as_stored(nic_cluster_policy(config)),
        ipoib=tuple(as_stored(obj) for obj in ipoib_objects(config)),
    )


def network_objects(config: GpuStackConfig) -> list[Object]:
    """The Network Operator's plain objects in apply order ([] when it is off); the chart is separate."""
    rendered = render_network(config)
    return rendered.objects if rendered is not None else []


def network_summary(config: GpuStackConfig) -> list[str]:
    """Lines saying what the RDMA wiring is, for `render --summary` ([] when the Network Operator is off)."""
    if not network_wanted(config.network, config.pools):
        return []
    network, rdma = config.network, config.operator.driver.rdma
    if network.mofed == "operator":
        image = network.ofed_driver.image
        mofed = f"DOCA-OFED driver container {image.image}:{image.version}"
    else:
        mofed = "the host's MOFED"
    plugins = {"sriov": network.sriov_device_plugin.resource, "shared": network.rdma_shared_device_plugin.resource}
    resources = ", ".join(f"{plugins[kind]} ({kind})" for kind in network.device_plugins) or "no device plugin"
    if rdma.enabled:
        gpu = "legacy nvidia-peermem" + (" with the host's MOFED" if rdma.use_host_mofed else " (waits for MOFED)")
    else:
        gpu = f"DMA-BUF (kernel modules: {config.operator.driver.kernel_module_type})"
    lines = [
        f"InfiniBand nodes: NodeFeatureRule nfd-network-rule labels VFs {', '.join(network.vf_device_ids)} "
        "(feature.node.kubernetes.io/pci-15b3.present)",
        f"NicClusterPolicy nic-cluster-policy: {mofed}; RDMA resources {resources}",
        f"GPUDirect RDMA: {gpu}; one NFD (the network operator's)",
    ]
    if network.ipoib is not None:
        lines.append(f"IPoIB network {network.ipoib.name} on {network.ipoib.master}")
    return lines
