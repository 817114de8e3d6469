"""`RemediationIdentity`: the Azure identity the operator controller repairs GPU nodes with, and no more rights.

With `remediation.cloud.provider: azure`, `GpuCluster` creates, in the cluster's resource group:

1. a user-assigned managed identity (`<cluster>-gpu-remediation`);
2. a federated identity credential on it that trusts the cluster's OIDC issuer for the controller's ServiceAccount
   (`system:serviceaccount:<namespace>:gpu-operator`, audience `api://AzureADTokenExchange`): the controller's pods
   sign in as the identity through AKS workload identity, with no secret anywhere;
3. a custom role whose only actions are what :mod:`gpu_operator.agents.cloud.azure_vmss` calls (read a scale set
   instance and its instance view, restart it, reimage it where `remediation.cloud.reimage` allows, read the status
   of its operations), assignable only on the node resource group;
4. the role assigned to the identity on the node resource group, where AKS keeps the pools' scale sets.

The cluster (created here or existing) is looked up once it exists for its OIDC issuer, node resource group,
subscription and region; a cluster without the OIDC issuer is refused with the fix. The controller's ServiceAccount
and pods are marked for the webhook by `GpuOperator` (:func:`gpu_operator.render.aks.workload_identity.
with_workload_identity`) with `client_id`. See :mod:`gpu_operator.render.aks.workload_identity` for why each action
is needed and why nothing of AKS's own API is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import pulumi
import pulumi_azure_native as azure_native
from pulumi_azure_native import authorization, containerservice, managedidentity

from gpu_operator.components.component_args import required
from gpu_operator.config import GpuStackConfig
from gpu_operator.render.aks.workload_identity import (
    TOKEN_AUDIENCE,
    node_resource_group_scope,
    remediation_role_actions,
    service_account_subject,
)

__all__ = [
    "AzureRemediation",
    "RemediationIdentity",
    "RemediationIdentityArgs",
    "TOKEN",
    "azure_remediation",
    "oidc_issuer_url",
]

TOKEN = "gpu-operator:index:RemediationIdentity"
#: The federated credential's name on the identity.
FEDERATION_NAME = "gpu-operator-controller"


@dataclass(frozen=True)
class AzureRemediation:
    """What the stack needs of `remediation.cloud` when it names Azure."""

    reimage: bool = True


def azure_remediation(config: GpuStackConfig) -> AzureRemediation | None:
    """`remediation.cloud` when its provider is `azure`, else None."""
    cloud = config.remediation.cloud
    return AzureRemediation(reimage=cloud.reimage) if cloud.provider == "azure" else None


def oidc_issuer_url(profile: Any, cluster: str) -> str:
    """The cluster's OIDC issuer URL (`oidcIssuerProfile.issuerURL`); an error with the fix when it has none."""
    if isinstance(profile, Mapping):  # the SDK's output type, or a plain dict once it went through Output.all
        issuer = profile.get("issuer_url") or profile.get("issuerURL")
    else:
        issuer = getattr(profile, "issuer_url", None)
    if not issuer:
        raise ValueError(
            f"the AKS cluster {cluster} has no OIDC issuer, so the controller cannot sign in with workload identity "
            "(remediation.cloud.provider: azure): enable it with `az aks update --enable-oidc-issuer "
            "--enable-workload-identity` (a cluster created by this stack has both)")
    return str(issuer)


class RemediationIdentityArgs(TypedDict):
    """Inputs of a RemediationIdentity."""

    resource_group_name: pulumi.Input[str]
    """The cluster's resource group: the identity lives there."""
    cluster_name: pulumi.Input[str]
    """The AKS cluster; resolve it only once the cluster exists (GpuCluster's `cluster_name` does)."""
    namespace: str
    """The controller's namespace."""
    service_account: str
    """The controller's ServiceAccount."""
    remediation: AzureRemediation
    azure_provider: azure_native.Provider


class RemediationIdentity(pulumi.ComponentResource):
    """A user-assigned identity for the controller, federated with its ServiceAccount, allowed only its repairs."""

    client_id: pulumi.Output[str]
    """For the ServiceAccount's `azure.workload.identity/client-id`."""
    node_resource_group_id: pulumi.Output[str]
    """The scope of the grant."""
    identity: managedidentity.UserAssignedIdentity
    federated_credential: managedidentity.FederatedIdentityCredential
    role_definition: authorization.RoleDefinition
    role_assignment: authorization.RoleAssignment

    def __init__(self, name: str, args: RemediationIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        azure = required(args, "azure_provider", azure_native.Provider, f"RemediationIdentity({name!r})",
                         "a pulumi_azure_native.Provider for the cluster's subscription")
        remediation = required(args, "remediation", AzureRemediation, f"RemediationIdentity({name!r})",
                               "the Azure remediation settings (azure_remediation(config))")
        super().__init__(TOKEN, name, {}, opts)
        on_azure = pulumi.ResourceOptions(parent=self, provider=azure)
        resource_group = args["resource_group_name"]
        cluster = containerservice.get_managed_cluster_output(
            resource_group_name=resource_group, resource_name=args["cluster_name"],
            opts=pulumi.InvokeOutputOptions(parent=self, provider=azure))
        scope = pulumi.Output.all(cluster.id, cluster.node_resource_group).apply(
            lambda values: node_resource_group_scope(values[0], values[1] or ""))
        issuer = pulumi.Output.all(cluster.oidc_issuer_profile, cluster.name).apply(
            lambda values: oidc_issuer_url(values[0], values[1]))
        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_group_name=resource_group,
            resource_name_=pulumi.Output.from_input(args["cluster_name"]).apply(lambda c: f"{c}-gpu-remediation"),
            location=cluster.location,
            opts=on_azure,
        )
        self.federated_credential = managedidentity.FederatedIdentityCredential(
            f"{name}-federation",
            resource_group_name=resource_group,
            resource_name_=self.identity.name,
            federated_identity_credential_resource_name=FEDERATION_NAME,
            issuer=issuer,
            subject=service_account_subject(args["namespace"], args["service_account"]),
            audiences=[TOKEN_AUDIENCE],
            opts=on_azure,
        )
        self.role_definition = authorization.RoleDefinition(
            f"{name}-role",
            scope=scope,
            assignable_scopes=[scope],
            role_name=pulumi.Output.all(resource_group, args["cluster_name"]).apply(
                lambda values: f"GPU node remediation ({values[0]}/{values[1]})"),
            description="Restart, reimage and read the GPU nodes' scale set instances and the status of those "
                        "operations (the GPU operator's remediation controller)",
            role_type="CustomRole",
            permissions=[authorization.PermissionArgs(actions=remediation_role_actions(remediation.reimage))],
            opts=on_azure,
        )
        self.role_assignment = authorization.RoleAssignment(
            f"{name}-grant",
            principal_id=self.identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            role_definition_id=self.role_definition.id,
            scope=scope,
            opts=on_azure,
        )
        self.client_id = self.identity.client_id
        self.node_resource_group_id = scope
        self.register_outputs({"clientId": self.client_id, "nodeResourceGroupId": scope})
