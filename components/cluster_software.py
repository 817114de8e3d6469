"""What a GPU fleet runs on its Kubernetes cluster, in the order it has to come up, whoever made the cluster.

`GpuCluster` installs it on the AKS cluster it creates or finds; the stack program installs it on the cluster its
`kubeconfig` points at. Both get the same pieces from one config document, each only when the config asks for it:

1. `NetworkOperator` (InfiniBand pools, or `network.enabled: true`): chart, NodeFeatureRule, NicClusterPolicy, and
   with `network.waitForMofed` the wait for MOFED; the GPU operator comes after it, since its driver needs MOFED;
2. `GpuOperator`: every operand, after the network and whatever `before` names (the pools);
3. `DraDriver` (pools with `gpuAllocation: dra`, or `dra.enabled: true`): NVIDIA's DRA driver chart and the
   claim templates, after the operator (the driver's kubelet plugin needs the GPU driver);
4. `GpuMonitoring` (when the `monitoring` section asks for any object): alerts and dashboard, after the operator.

Switching NFD between the two charts that can run it is an update of its CRDs in place (:mod:`.nfd_handover`).

`names` gives each component its logical name, so an existing stack keeps its URNs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.dra_driver import DraDriver
from gpu_operator.components.monitoring import GpuMonitoring
from gpu_operator.components.network_operator import NetworkOperator
from gpu_operator.components.nfd_handover import NfdChartHomes, nfd_crd_handover
from gpu_operator.components.operator import GpuOperator
from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import dra_wanted
from gpu_operator.config.network import network_wanted
from gpu_operator.render.monitoring import monitoring_objects

__all__ = ["ClusterSoftware", "SoftwareNames", "install_cluster_software"]


@dataclass(frozen=True)
class SoftwareNames:
    """The logical names of the four components."""

    network: str
    operator: str
    dra: str
    monitoring: str

    @classmethod
    def prefixed(cls, prefix: str) -> SoftwareNames:
        return cls(f"{prefix}-network", f"{prefix}-operator", f"{prefix}-dra", f"{prefix}-monitoring")


@dataclass(frozen=True)
class ClusterSoftware:
    """The components installed; those the config does not ask for are None."""

    network_operator: NetworkOperator | None
    operator: GpuOperator
    dra_driver: DraDriver | None
    monitoring: GpuMonitoring | None


def install_cluster_software(
    config: GpuStackConfig,
    provider: k8s.Provider,
    kubeconfig: pulumi.Input[str],
    names: SoftwareNames,
    *,
    parent: pulumi.Resource | None = None,
    before: Sequence[pulumi.Resource] = (),
    deleted_with: pulumi.Resource | None = None,
    wait_for_daemonsets: bool = False,
    agents_image: pulumi.Input[str] | None = None,
    controller_identity: pulumi.Input[str] | None = None,
) -> ClusterSoftware:
    """Register the components the config asks for, each with `provider`, in the order above."""

    def options(depends_on: Sequence[pulumi.Resource],
                transforms: list[pulumi.ResourceTransform] | None = None) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on) or None, deleted_with=deleted_with,
                                      transforms=transforms)

    # NFD's CRDs move between the two charts that can run NFD (nfd_handover)
    homes = NfdChartHomes.of(names.operator, names.network)
    network = None
    if network_wanted(config.network, config.pools):
        network = NetworkOperator(names.network, {"provider": provider, "config": config, "kubeconfig": kubeconfig},
                                  options(before, [nfd_crd_handover(homes, True, parent)]))
    operator_args: dict[str, Any] = {"provider": provider, "config": config, "kubeconfig": kubeconfig,
                                     "wait_for_daemonsets": wait_for_daemonsets, "agents_image": agents_image,
                                     "controller_identity": controller_identity}
    operator = GpuOperator(names.operator, operator_args,  # type: ignore[arg-type]
                           options([*before, *([network] if network is not None else [])],
                                   [nfd_crd_handover(homes, False, parent)]))
    dra = None
    if dra_wanted(config.dra, config.pools):
        dra = DraDriver(names.dra, {"provider": provider, "config": config}, options([operator]))
    monitoring = None
    if monitoring_objects(config):
        monitoring = GpuMonitoring(names.monitoring, {"provider": provider, "config": config}, options([operator]))
    return ClusterSoftware(network, operator, dra, monitoring)
