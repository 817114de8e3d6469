"""`GpuCluster`: an AKS GPU fleet from one config document, in the order it has to come up.

1. `AksCluster`: the existing or created cluster, the `AKSInfinibandSupport` registration when asked for
   (waited for until Registered), and the cluster's kubeconfigs;
2. one `GpuNodePool` per entry of `pools` (after the cluster and the feature registration);
3. with `agents.build`, the agents image (`AgentsImage`): built, pushed, and pullable by the cluster's kubelet
   identity (AcrPull); the operator's DaemonSets reference it by digest;
   with `remediation.cloud.provider: azure` (and a controller to use it), `RemediationIdentity`: the identity the
   operator controller reboots and reimages GPU nodes as, federated with its ServiceAccount and allowed only that
   on the node resource group; the controller's ServiceAccount and pods are marked for AKS workload identity;
4. the Kubernetes provider, built from the kubeconfig `aks.credentials` chooses once every pool exists;
5. with InfiniBand pools (unless `network.enabled: false`), `NetworkOperator` on it: chart, NodeFeatureRule,
   NicClusterPolicy;
6. `GpuOperator` on it, after the pools and the NicClusterPolicy, then `GpuMonitoring` (the GPU alerts and
   dashboard) after the operator, and with pools that allocate GPUs through DRA (`gpuAllocation: dra`),
   `DraDriver` (NVIDIA's DRA driver chart and the claim templates) after the operator. The provider carries the ordering: a component's `depends_on` does not reach its
   children, but every object created with a provider waits for what the provider depends on. With a cluster
   created here, the pools and the Kubernetes objects are `deleted_with` the cluster: deleting the cluster takes
   them along.

The exported `kubeconfig` is the cluster's user credential (exec format), not the admin account the provider
may use. `gpu_resource_names` lists what workloads can request, including the MIG profiles the pools fix.

Everything flows from the pool definitions: the config is validated and made effective once (every operand
tolerates every pool taint, the driver image follows the pools' node images, InfiniBand pools get GPUDirect
RDMA), and each pool's node labels come from the same operands the operator renders.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s

from gpu_operator.components.agents_image import AgentsImage, build_context, cluster_kubelet_object_id
from gpu_operator.components.aks_cluster import AksCluster, cluster_identifier
from gpu_operator.components.cluster_software import SoftwareNames, install_cluster_software
from gpu_operator.components.component_args import required
from gpu_operator.components.dra_driver import DraDriver
from gpu_operator.components.feature_registration import FeatureWait
from gpu_operator.components.kubernetes_provider import kubernetes_provider
from gpu_operator.components.monitoring import GpuMonitoring
from gpu_operator.components.network_operator import NetworkOperator
from gpu_operator.components.node_pool import AGENT_POOL, GpuNodePool
from gpu_operator.components.outage_warning import OutageGuard
from gpu_operator.components.operator import GpuOperator
from gpu_operator.components.remediation_identity import RemediationIdentity, azure_remediation
from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.render.aks.node_labels import rendered_deploy_operands
from gpu_operator.render.operands.operator_controller import NAME as CONTROLLER_ACCOUNT
from gpu_operator.render.aks.resources import fleet_gpu_resource_names
from gpu_operator.render.registry import render

__all__ = ["GpuCluster", "GpuClusterArgs", "TOKEN"]

TOKEN = "gpu-operator:index:GpuCluster"


def _by_pool(values: dict[str, pulumi.Output[Any]]) -> pulumi.Output[dict[str, Any]]:
    """One output mapping pool name → value (an empty mapping without pools)."""
    names = list(values)
    return pulumi.Output.all(*values.values()).apply(lambda resolved: dict(zip(names, resolved, strict=True)))


class GpuClusterArgs(TypedDict):
    """Inputs of a GpuCluster."""

    config: GpuStackConfig | Mapping[str, Any]
    """The config document; it needs the `aks` section (and usually `pools`)."""
    azure_provider: azure_native.Provider
    """The Azure provider for the cluster, the pools and the credential lookup."""
    wait_for_daemonsets: NotRequired[bool]
    """Wait for operand DaemonSet rollouts during `pulumi up` (default false)."""
    feature_wait: NotRequired[FeatureWait]
    """How long to wait for the InfiniBand feature to be Registered (default 30 minutes, polled every 20 s)."""
    adopt_existing_objects: NotRequired[bool]
    """Let the Kubernetes provider take over objects that already exist (`upsert_existing_objects`), e.g. those of
    a `helm install` being replaced (default false; see the docs' task page docs/tasks/adopt-existing-install.md)."""


class GpuCluster(pulumi.ComponentResource):
    """AKS cluster, GPU node pools and the GPU operator's operands, for one environment."""

    kubeconfig: pulumi.Output[str]
    """The cluster's user kubeconfig in exec format (secret), for consumers; never the admin account."""
    cluster_name: pulumi.Output[str]
    resource_group_name: pulumi.Output[str]
    pool_names: pulumi.Output[list[str]]
    """Names of the GPU pools, once they exist."""
    gpu_resource_names: pulumi.Output[list[str]]
    """Extended resources workloads request (`nvidia.com/gpu`, shared and MIG names the config fixes)."""
    node_selector_labels: pulumi.Output[dict[str, dict[str, str]]]
    """Per pool, the node selector that lands a pod there."""
    tolerations: pulumi.Output[dict[str, list[dict[str, str]]]]
    """Per pool, the tolerations its taints require."""
    cluster: AksCluster
    pools: dict[str, GpuNodePool]
    kubernetes_provider: k8s.Provider
    agents_image: AgentsImage | None
    """The agents image built and pushed by the stack (with `agents.build`)."""
    network_operator: NetworkOperator | None
    """The Network Operator and RDMA wiring (with InfiniBand pools, unless `network.enabled: false`)."""
    operator: GpuOperator
    monitoring: GpuMonitoring | None
    """The GPU alerts and dashboard (`monitoring`; the rules where `cluster.prometheusOperator` is true)."""
    dra_driver: DraDriver | None
    """NVIDIA's DRA driver, for pools with `gpuAllocation: dra` (or `dra.enabled: true`)."""
    remediation_identity: RemediationIdentity | None
    """The operator controller's Azure identity for cloud repairs (`remediation.cloud.provider: azure`)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        azure = required(args, "azure_provider", azure_native.Provider, f"GpuCluster({name!r})",
                         "a pulumi_azure_native.Provider for the cluster's subscription")
        config = parse_config(required(args, "config", (GpuStackConfig, Mapping), f"GpuCluster({name!r})",
                                     "the config document (a mapping)"))
        if config.aks is None:
            raise ConfigError([Problem("aks", "GpuCluster needs the AKS cluster (aks.resourceGroup, aks.clusterName)")])
        rendered = rendered_deploy_operands(render(config))
        if config.agents.build is not None:
            build_context(config.agents.build)  # a missing Dockerfile fails before anything is registered
        super().__init__(TOKEN, name, {}, opts)
        self.cluster = AksCluster(
            f"{name}-aks",
            {
                "aks": config.aks,
                "azure_provider": azure,
                "kubernetes_provider": False,
                "feature_wait": args.get("feature_wait", FeatureWait()),
            },
            pulumi.ResourceOptions(parent=self),
        )
        prerequisites = [r for r in (self.cluster.managed_cluster, self.cluster.infiniband_feature) if r is not None]
        self.pools = {
            pool.name: GpuNodePool(
                f"{name}-{pool.name}",
                {
                    "config": config,
                    "pool": pool.name,
                    "resource_group_name": self.cluster.resource_group_name,
                    "cluster_name": self.cluster.cluster_name,
                    "azure_provider": azure,
                    "rendered_operands": rendered,
                },
                pulumi.ResourceOptions(
                    parent=self, depends_on=prerequisites or None, deleted_with=self.cluster.managed_cluster
                ),
            )
            for pool in config.pools
        }
        pools = list(self.pools.values())
        # a pool removed from the config takes its own guard with it: this one remembers which pools there were
        self.pools_guard = OutageGuard(f"{name}-pools", AGENT_POOL, {
            f"{name}-{pool.name}-agentpool": {} for pool in config.pools
        }, pulumi.ResourceOptions(parent=self, deleted_with=self.cluster.managed_cluster))
        self.agents_image = None
        if config.agents.build is not None:
            self.agents_image = AgentsImage(
                f"{name}-agents-image",
                {
                    "build": config.agents.build,
                    "azure_provider": azure,
                    "kubelet_object_id": cluster_kubelet_object_id(
                        self.cluster.resource_group_name, self.cluster.cluster_name, azure, self
                    ),
                },
                pulumi.ResourceOptions(parent=self),
            )
        self.remediation_identity = self._remediation_identity(name, config, azure)
        self.kubernetes_provider = kubernetes_provider(
            f"{name}-kubernetes",
            self.cluster.provider_kubeconfig,
            cluster_identifier=cluster_identifier(config.aks),
            adopt=bool(args.get("adopt_existing_objects")),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[pool.agent_pool for pool in pools] or None),
        )
        software = install_cluster_software(
            config, self.kubernetes_provider, self.cluster.provider_kubeconfig, SoftwareNames.prefixed(name),
            parent=self, before=pools, deleted_with=self.cluster.managed_cluster,
            wait_for_daemonsets=args.get("wait_for_daemonsets", False),
            agents_image=self.agents_image.image_ref if self.agents_image is not None else None,
            controller_identity=(self.remediation_identity.client_id
                                 if self.remediation_identity is not None else None),
        )
        self.network_operator = software.network_operator
        self.operator = software.operator
        self.dra_driver = software.dra_driver
        self.monitoring = software.monitoring
        self.kubeconfig = self.cluster.kubeconfig
        self.cluster_name = self.cluster.cluster_name
        self.resource_group_name = self.cluster.resource_group_name
        self.pool_names = pulumi.Output.all(*[pool.pool_name for pool in pools]).apply(list)
        self.gpu_resource_names = pulumi.Output.from_input(fleet_gpu_resource_names(config))
        self.node_selector_labels = _by_pool({pool_name: pool.node_selector for pool_name, pool in self.pools.items()})
        self.tolerations = _by_pool({pool_name: pool.tolerations for pool_name, pool in self.pools.items()})
        self.register_outputs({
            "kubeconfig": self.kubeconfig,
            "clusterName": self.cluster_name,
            "resourceGroupName": self.resource_group_name,
            "poolNames": self.pool_names,
            "gpuResourceNames": self.gpu_resource_names,
            "nodeSelectorLabels": self.node_selector_labels,
            "tolerations": self.tolerations,
        })

    def _remediation_identity(self, name: str, config: GpuStackConfig,
                              azure: azure_native.Provider) -> RemediationIdentity | None:
        """With `remediation.cloud.provider: azure`, the identity the controller reboots and reimages nodes as."""
        remediation = azure_remediation(config)
        if remediation is None:
            return None
        if not config.controller_enabled:
            pulumi.log.warn("remediation.cloud.provider is azure, but no operator controller runs to act on it (it "
                            "needs the agents image: agents.image or agents.build): no Azure identity is created",
                            resource=self)
            return None
        return RemediationIdentity(
            f"{name}-remediation",
            {"resource_group_name": self.cluster.resource_group_name, "cluster_name": self.cluster.cluster_name,
             "namespace": config.namespace, "service_account": CONTROLLER_ACCOUNT, "remediation": remediation,
             "azure_provider": azure},
            pulumi.ResourceOptions(parent=self, deleted_with=self.cluster.managed_cluster),
        )
