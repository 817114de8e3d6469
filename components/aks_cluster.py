"""`AksCluster`: the AKS cluster the GPU pools join, existing or created, and a Kubernetes provider for it.

With `aks.create`, the cluster is a `ManagedCluster` (system pool, managed identity, OIDC issuer, workload
identity) rendered by :mod:`gpu_operator.render.aks.managed_cluster`, `protect`ed by default (`aks.protect`:
a replace would delete every GPU pool with it) and warned about in preview before any delete. Otherwise the
cluster named by `aks.resourceGroup`/`aks.clusterName` is used as it is.

Two kubeconfigs come out, both secrets, both looked up only once the cluster exists (a lookup against a cluster
still being created fails, and at preview of a new cluster there is nothing to look up):

* `provider_kubeconfig`, what this program's Kubernetes provider signs in with (`aks.credentials`: the admin
  account, the user credential, or an Entra ID `exec` kubeconfig run by kubelogin);
* `kubeconfig`, the user credential in exec format (`listClusterUserCredential`), the one to export: never the
  cluster-admin account; on Entra ID clusters it holds no secret at all and every consumer signs in as itself.

With `aks.registerInfinibandFeature`, the subscription feature `AKSInfinibandSupport` is registered too, kept
when the stack lets go of it (see :mod:`.feature_registration`), and `cluster_name` resolves only once the
feature is `Registered`, so pools built from it land on one InfiniBand fabric.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice, features

from gpu_operator.aks.features import INFINIBAND_SUPPORT
from gpu_operator.components.azure_args import managed_cluster_args
from gpu_operator.components.component_args import required
from gpu_operator.components.feature_registration import REGISTERED, FeatureWait, wait_until_registered
from gpu_operator.components.outage_warning import OutageGuard
from gpu_operator.config.aks import AksSpec, parse_aks
from gpu_operator.render.aks.kubeconfig import decode_kubeconfig, with_kubelogin_mode
from gpu_operator.render.aks.managed_cluster import managed_cluster_resource

__all__ = [
    "ADMIN_CREDENTIALS", "AksCluster", "AksClusterArgs", "MissingLookupAnswer", "TOKEN", "USER_CREDENTIALS",
    "cluster_identifier",
]

TOKEN = "gpu-operator:index:AksCluster"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
#: The invokes that fetch the cluster's kubeconfigs (what mocks must answer, see docs/tasks/components.md, "Testing a
#: program under mocks").
ADMIN_CREDENTIALS = "azure-native:containerservice:listManagedClusterAdminCredentials"
USER_CREDENTIALS = "azure-native:containerservice:listManagedClusterUserCredentials"
FEATURE_LOOKUP = "azure-native:features:getSubscriptionFeatureRegistration"


class MissingLookupAnswer(RuntimeError):
    """An invoke answered without the field the component reads: under test mocks, `Mocks.call` did not answer it."""


def _feature_state(registration: Any) -> str:
    """The state of a feature registration lookup; an answer without `properties` is named as what it is."""
    if registration.properties is None:
        raise MissingLookupAnswer(
            f"{FEATURE_LOOKUP} answered without `properties` for {INFINIBAND_SUPPORT.name}; Azure always returns "
            "them, so this is a mock that does not answer the call: answer it in your Mocks.call "
            "(`properties.state`: Registered), or use GpuMocks from gpu_operator.components.testing"
        )
    return str(registration.properties.state)


def _kubeconfig(kubeconfigs: Any, credential: str, token: str) -> str:
    """The decoded kubeconfig of a credential lookup; an answer without `kubeconfigs` is named as what it is."""
    if kubeconfigs is None:
        raise MissingLookupAnswer(
            f"{token} answered without `kubeconfigs` for {credential}; AKS always returns the list, so this is a "
            "mock that does not answer the call: answer it in your Mocks.call (one base64 kubeconfig in "
            "`kubeconfigs`), or use GpuMocks from gpu_operator.components.testing"
        )
    return decode_kubeconfig([k.value for k in kubeconfigs], credential)


class AksClusterArgs(TypedDict):
    """Inputs of an AksCluster."""

    aks: AksSpec | Mapping[str, Any]
    """The `aks` section of the config document."""
    azure_provider: azure_native.Provider
    """The Azure provider every Azure resource and lookup uses (never ambient defaults)."""
    kubernetes_provider: NotRequired[bool]
    """Create the Kubernetes provider (default true). A caller whose Kubernetes objects must wait for other
    resources (GPU pools) builds its own provider from `provider_kubeconfig` with `depends_on` instead: a
    component's `depends_on` does not reach its children, a provider's does reach every object created with it."""
    feature_wait: NotRequired[FeatureWait]
    """How long to wait for the InfiniBand feature to be Registered (default 30 minutes, polled every 20 s)."""


def cluster_identifier(aks: AksSpec) -> str:
    """What identifies the cluster to the Kubernetes provider, whatever kubeconfig it is given.

    pulumi-kubernetes replaces a provider, and with it every object created with it, when its kubeconfig points
    elsewhere; with `clusterIdentifier` set it replaces only when this value changes, so a rotated credential or
    a switch of `aks.credentials` is an update, not a GPU outage."""
    return f"aks:{aks.resource_group}/{aks.cluster_name}"


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster (existing or created here) and the Kubernetes provider its GPU components use."""

    resource_group_name: pulumi.Output[str]
    """The cluster's resource group."""
    cluster_name: pulumi.Output[str]
    """The cluster's name; resolves once the cluster exists and the features it registers are Registered."""
    kubeconfig: pulumi.Output[str]
    """The user kubeconfig in exec format (secret): the one to hand to consumers, never cluster-admin."""
    provider_kubeconfig: pulumi.Output[str]
    """The kubeconfig this program's Kubernetes provider uses, as `aks.credentials` chooses (secret)."""
    kubernetes_provider: k8s.Provider | None
    managed_cluster: containerservice.ManagedCluster | None
    infiniband_feature: features.SubscriptionFeatureRegistration | None

    def __init__(self, name: str, args: AksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        azure = required(args, "azure_provider", azure_native.Provider, f"AksCluster({name!r})",
                         "a pulumi_azure_native.Provider for the cluster's subscription")
        aks = parse_aks(required(args, "aks", (AksSpec, Mapping), f"AksCluster({name!r})", "the `aks` config section (a mapping)"))
        super().__init__(TOKEN, name, {}, opts)
        on_azure = pulumi.ResourceOptions(parent=self, provider=azure)
        self.managed_cluster = None
        self.infiniband_feature = None
        cluster_name: pulumi.Output[str] = pulumi.Output.from_input(aks.cluster_name)
        if aks.create:
            resource = managed_cluster_resource(aks)
            guard = OutageGuard(f"{name}-cluster", MANAGED_CLUSTER, {f"{name}-cluster": {
                "resourceGroup": aks.resource_group, "name": aks.cluster_name, "location": resource["location"],
            }}, pulumi.ResourceOptions(parent=self))
            self.managed_cluster = containerservice.ManagedCluster(
                f"{name}-cluster",
                resource_group_name=aks.resource_group,
                resource_name_=aks.cluster_name,
                **managed_cluster_args(resource),
                opts=pulumi.ResourceOptions.merge(
                    on_azure, pulumi.ResourceOptions(protect=aks.protect, depends_on=[guard.stash])
                ),
            )
            # the name alone is known at once; taking it from the cluster's id makes every use wait for the cluster
            cluster_name = self.managed_cluster.id.apply(lambda _: aks.cluster_name)
        self.resource_group_name = pulumi.Output.from_input(aks.resource_group)
        self.provider_kubeconfig, self.kubeconfig = self._credentials(aks, cluster_name, azure)
        if aks.register_infiniband_feature:
            self.infiniband_feature = features.SubscriptionFeatureRegistration(
                f"{name}-infiniband-feature",
                provider_namespace=INFINIBAND_SUPPORT.provider_namespace,
                feature_name=INFINIBAND_SUPPORT.name,
                # the registration is the subscription's, not this stack's: never unregister it
                opts=pulumi.ResourceOptions.merge(on_azure, pulumi.ResourceOptions(retain_on_delete=True)),
            )
            registered = self._registered(self.infiniband_feature, azure, args.get("feature_wait", FeatureWait()))
            cluster_name = pulumi.Output.all(cluster_name, registered).apply(lambda values: values[0])
        self.cluster_name = cluster_name
        self.kubernetes_provider = None
        if args.get("kubernetes_provider", True):
            self.kubernetes_provider = k8s.Provider(
                f"{name}-kubernetes",
                kubeconfig=self.provider_kubeconfig,
                cluster_identifier=cluster_identifier(aks),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({
            "resourceGroupName": self.resource_group_name,
            "clusterName": self.cluster_name,
            "kubeconfig": self.kubeconfig,
        })

    def _credentials(
        self, aks: AksSpec, cluster_name: pulumi.Output[str], azure: azure_native.Provider
    ) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """(provider kubeconfig, exported user kubeconfig), both secret."""
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=azure)
        user = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=aks.resource_group, resource_name=cluster_name, format="exec", opts=invoke
        )
        user_kubeconfig = user.kubeconfigs.apply(
            lambda kubeconfigs: _kubeconfig(kubeconfigs, "the cluster user (exec)", USER_CREDENTIALS)
        )
        if aks.credentials == "admin":
            admin = containerservice.list_managed_cluster_admin_credentials_output(
                resource_group_name=aks.resource_group, resource_name=cluster_name, opts=invoke
            )
            provider = admin.kubeconfigs.apply(
                lambda kubeconfigs: _kubeconfig(kubeconfigs, "the cluster admin", ADMIN_CREDENTIALS)
            )
        elif aks.credentials == "user":
            plain = containerservice.list_managed_cluster_user_credentials_output(
                resource_group_name=aks.resource_group, resource_name=cluster_name, opts=invoke
            )
            provider = plain.kubeconfigs.apply(
                lambda kubeconfigs: _kubeconfig(kubeconfigs, "the cluster user", USER_CREDENTIALS)
            )
        else:
            mode = aks.effective_kubelogin_mode or "azurecli"
            provider = user_kubeconfig.apply(lambda kubeconfig: with_kubelogin_mode(kubeconfig, mode))
        return pulumi.Output.secret(provider), pulumi.Output.secret(user_kubeconfig)

    def _registered(
        self, registration: features.SubscriptionFeatureRegistration, azure: azure_native.Provider, wait: FeatureWait
    ) -> pulumi.Output[str]:
        """The registration's state once it is `Registered` (polled; fails past the timeout)."""
        feature = f"{INFINIBAND_SUPPORT.provider_namespace}/{INFINIBAND_SUPPORT.name}"

        async def lookup() -> str | None:
            result = features.get_subscription_feature_registration_output(
                provider_namespace=INFINIBAND_SUPPORT.provider_namespace,
                feature_name=INFINIBAND_SUPPORT.name,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=azure),
            )
            return await result.apply(_feature_state).future()

        async def registered(_: str) -> str:
            if not pulumi.runtime.is_dry_run():
                return await wait_until_registered(lookup, feature, wait)
            # a preview never waits: it says what `pulumi up` will wait for
            state = await lookup()
            if state != REGISTERED:
                pulumi.log.warn(
                    f"subscription feature {feature} is {state or 'unknown'}: `pulumi up` waits up to "
                    f"{wait.timeout_seconds / 60:g} minutes for it to be Registered before creating GPU pools",
                    resource=self,
                )
            return state or "unknown"

        return registration.id.apply(registered)
