"""`AksCluster`: the AKS cluster the GPU pools join, existing or created, and a Kubernetes provider for it.

With `aks.create`, the cluster is a `ManagedCluster` (system pool, managed identity, OIDC issuer, workload
identity) rendered by :mod:`gpu_operator.render.aks.managed_cluster`; otherwise the cluster named by
`aks.resourceGroup`/`aks.clusterName` is used as it is. Either way the Kubernetes provider is built from the
cluster's admin kubeconfig (`listClusterAdminCredential`), which stays a secret in state and outputs (or left to
the caller, who may need it to wait for other resources; see `kubernetes_provider`). With
`aks.registerInfinibandFeature`, the subscription feature `AKSInfinibandSupport` is registered too, so IB pools
land on one InfiniBand fabric.
"""

from __future__ import annotations

import base64
from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice, features

from gpu_operator.aks.features import INFINIBAND_SUPPORT
from gpu_operator.components.azure_args import managed_cluster_args
from gpu_operator.config.aks import AksSpec, parse_aks
from gpu_operator.render.aks.managed_cluster import managed_cluster_resource

__all__ = ["AksCluster", "AksClusterArgs", "TOKEN", "admin_kubeconfig"]

TOKEN = "gpu-operator:index:AksCluster"


class AksClusterArgs(TypedDict):
    """Inputs of an AksCluster."""

    aks: AksSpec | Mapping[str, Any]
    """The `aks` section of the config document."""
    azure_provider: azure_native.Provider
    """The Azure provider every Azure resource and lookup uses (never ambient defaults)."""
    kubernetes_provider: NotRequired[bool]
    """Create the Kubernetes provider (default true). A caller whose Kubernetes objects must wait for other
    resources (GPU pools) builds its own provider from `kubeconfig` with `depends_on` instead: a component's
    `depends_on` does not reach its children, a provider's does reach every object created with it."""


def admin_kubeconfig(kubeconfigs: Sequence[Any]) -> str:
    """The first kubeconfig of a credential list, decoded from the base64 the AKS API returns."""
    if not kubeconfigs:
        raise ValueError("AKS returned no admin kubeconfig (local accounts disabled on the cluster?)")
    return base64.b64decode(kubeconfigs[0].value).decode()


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster (existing or created here) and the Kubernetes provider its GPU components use."""

    resource_group_name: pulumi.Output[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Output[str]
    """The cluster's name; resolves once the cluster exists."""
    kubeconfig: pulumi.Output[str]
    """The cluster's admin kubeconfig (secret)."""
    kubernetes_provider: k8s.Provider | None
    managed_cluster: containerservice.ManagedCluster | None
    infiniband_feature: features.SubscriptionFeatureRegistration | None

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        aks = parse_aks(args["aks"])
        super().__init__(TOKEN, name, {}, opts)
        azure = args["azure_provider"]
        on_azure = pulumi.ResourceOptions(parent=self, provider=azure)
        self.managed_cluster = None
        self.infiniband_feature = None
        if aks.register_infiniband_feature:
            self.infiniband_feature = features.SubscriptionFeatureRegistration(
                f"{name}-infiniband-feature",
                provider_namespace=INFINIBAND_SUPPORT.provider_namespace,
                feature_name=INFINIBAND_SUPPORT.name,
                opts=on_azure,
            )
        cluster_name: pulumi.Output[str] = pulumi.Output.from_input(aks.cluster_name)
        if aks.create:
            self.managed_cluster = containerservice.ManagedCluster(
                f"{name}-cluster",
                resource_group_name=aks.resource_group,
                resource_name_=aks.cluster_name,
                **managed_cluster_args(managed_cluster_resource(aks)),
                opts=on_azure,
            )
            cluster_name = self.managed_cluster.id.apply(lambda _: aks.cluster_name)
        self.resource_group_name = pulumi.Output.from_input(aks.resource_group)
        self.cluster_name = cluster_name
        credentials = containerservice.list_managed_cluster_admin_credentials_output(
            resource_group_name=aks.resource_group,
            resource_name=cluster_name,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=azure),
        )
        self.kubeconfig = pulumi.Output.secret(credentials.kubeconfigs.apply(admin_kubeconfig))
        self.kubernetes_provider = None
        if args.get("kubernetes_provider", True):
            self.kubernetes_provider = k8s.Provider(
                f"{name}-kubernetes", kubeconfig=self.kubeconfig, opts=pulumi.ResourceOptions(parent=self)
            )
        self.register_outputs({
            "resourceGroupName": self.resource_group_name,
            "clusterName": self.cluster_name,
            "kubeconfig": self.kubeconfig,
        })
