"""RemediationIdentity under Pulumi mocks: the controller's identity, its federation, its narrow role and the grant.

Facts: AKS workload identity (Microsoft's "Use Microsoft Entra Workload ID with AKS": a user-assigned identity, a
federated credential with the cluster's OIDC issuer, subject `system:serviceaccount:<ns>:<sa>` and audience
`api://AzureADTokenExchange`, the ServiceAccount annotation and pod label); ARM's async operation tracking needs
the permission at resource group level ("Track asynchronous Azure operations"), hence the grant on the node
resource group, which the cluster names in `nodeResourceGroup`.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import GpuCluster, GpuOperator
from gpu_operator.components.component_args import ComponentArgsError
from gpu_operator.components.feature_registration import FeatureWait
from gpu_operator.components.remediation_identity import (
    AzureRemediation,
    RemediationIdentity,
    azure_remediation,
)
from gpu_operator.config import parse_config
from gpu_operator.render.aks.workload_identity import remediation_role_actions
from tests.support.agents import with_agents
from tests.support.azure_mocks import AzureMocks, run_azure_program
from tests.support.pulumi_mocks import Recording, run_program

SUBSCRIPTION = "9b4c2a55-0c3e-4f57-8d1e-3f5a9c0d7e21"
CLUSTER_ID = (f"/subscriptions/{SUBSCRIPTION}/resourcegroups/rg-gpu/providers/Microsoft.ContainerService/"
              "managedClusters/aks-gpu")
NODE_RESOURCE_GROUP = "MC_rg-gpu_aks-gpu_westeurope"
NODE_SCOPE = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP}"
ISSUER = "https://westeurope.oic.prod-aks.azure.com/00000000-0000-0000-0000-000000000000/1111/"
CLIENT_ID = "c0ffee00-1111-2222-3333-444444444444"
PRINCIPAL_ID = "0b1ec700-5555-6666-7777-888888888888"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
FEDERATION = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE = "azure-native:authorization:RoleDefinition"
GRANT = "azure-native:authorization:RoleAssignment"
LOOKUP = "azure-native:containerservice:getManagedCluster"
DOCUMENT = {"aks": {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"},
            "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2}]}


class ClusterMocks(AzureMocks):
    """AzureMocks that know the cluster's identity facts and give the identity its ids, as Azure does."""

    def __init__(self, issuer: str | None = ISSUER) -> None:
        super().__init__()
        self.issuer = issuer

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == LOOKUP:
            self.calls.append(args)
            profile = {"enabled": True, "issuerURL": self.issuer} if self.issuer else {"enabled": False}
            return {"id": CLUSTER_ID, "name": args.args["resourceName"], "location": "westeurope",
                    "nodeResourceGroup": NODE_RESOURCE_GROUP, "oidcIssuerProfile": profile}
        return super().call(args)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == IDENTITY:
            state = {**state, "name": args.inputs["resourceName"], "clientId": CLIENT_ID, "principalId": PRINCIPAL_ID}
        return resource_id, state


def _identity_program(remediation: AzureRemediation):
    def program() -> None:
        RemediationIdentity("gpu-remediation", {
            "resource_group_name": "rg-gpu", "cluster_name": "aks-gpu", "namespace": "gpu-operator",
            "service_account": "gpu-operator", "remediation": remediation,
            "azure_provider": azure_native.Provider("azure")})
    return program


@pytest.fixture(scope="module")
def identity() -> tuple[Recording, ClusterMocks]:
    mocks = ClusterMocks()
    return run_azure_program(_identity_program(AzureRemediation()), mocks=mocks), mocks


def test_the_identity_is_federated_with_the_controllers_service_account(identity: tuple[Recording, Any]) -> None:
    recording, mocks = identity
    [created] = recording.of_type(IDENTITY)
    assert created.inputs == {"resourceGroupName": "rg-gpu", "resourceName": "aks-gpu-gpu-remediation",
                              "location": "westeurope"}
    [federation] = recording.of_type(FEDERATION)
    assert federation.inputs == {
        "resourceGroupName": "rg-gpu", "resourceName": "aks-gpu-gpu-remediation",
        "federatedIdentityCredentialResourceName": "gpu-operator-controller", "issuer": ISSUER,
        "subject": "system:serviceaccount:gpu-operator:gpu-operator", "audiences": ["api://AzureADTokenExchange"]}
    [lookup] = [c for c in mocks.calls if c.token == LOOKUP]
    assert lookup.args == {"resourceGroupName": "rg-gpu", "resourceName": "aks-gpu"}
    azure_resources = [*recording.of_type("azure-native:")]
    assert len(azure_resources) == 4  # the identity, its federation, the role, the grant: nothing else
    assert {r.provider.rsplit("$", 1)[1] for r in azure_resources} == {"pulumi:providers:azure-native::azure::azure-id"}


def test_the_role_allows_only_the_repairs_and_only_on_the_node_resource_group(
        identity: tuple[Recording, Any]) -> None:
    recording, _ = identity
    [role] = recording.of_type(ROLE)
    assert role.inputs["scope"] == NODE_SCOPE and role.inputs["assignableScopes"] == [NODE_SCOPE]
    assert role.inputs["roleType"] == "CustomRole"
    assert role.inputs["roleName"] == "GPU node remediation (rg-gpu/aks-gpu)"
    [permission] = role.inputs["permissions"]
    assert permission == {"actions": remediation_role_actions(reimage=True)}
    [grant] = recording.of_type(GRANT)
    assert grant.inputs == {"principalId": PRINCIPAL_ID, "principalType": "ServicePrincipal",
                            "roleDefinitionId": f"{role.name}-id", "scope": NODE_SCOPE}


def test_without_reimage_the_role_cannot_reimage() -> None:
    recording = run_azure_program(_identity_program(AzureRemediation(reimage=False)), mocks=ClusterMocks())
    [role] = recording.of_type(ROLE)
    actions = role.inputs["permissions"][0]["actions"]
    assert actions == remediation_role_actions(reimage=False) and not [a for a in actions if "reimage" in a]


def test_a_cluster_without_an_oidc_issuer_is_refused_with_the_fix() -> None:
    with pytest.raises(Exception, match=r"no OIDC issuer.*--enable-oidc-issuer --enable-workload-identity"):
        run_azure_program(_identity_program(AzureRemediation()), mocks=ClusterMocks(issuer=None))


# --- the setting, and GpuCluster's wiring -------------------------------------------------------------------------


@pytest.mark.parametrize(("remediation", "expected"), [
    (None, None),
    ({"cloud": {}}, None),
    ({"cloud": {"reimage": True}}, None),
    ({"cloud": {"provider": "azure"}}, AzureRemediation(reimage=True)),
    ({"cloud": {"provider": "azure", "reimage": False}}, AzureRemediation(reimage=False)),
])
def test_the_setting_is_remediation_cloud_provider_azure(remediation: Any, expected: Any) -> None:
    document = {} if remediation is None else {"remediation": remediation}
    assert azure_remediation(parse_config(document)) == expected


def _cluster_program(document: dict[str, Any]):
    def program() -> None:
        GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure"),
                           "feature_wait": FeatureWait(timeout_seconds=60, interval_seconds=0)})
    return program


def _controller(recording: Recording, kind: str) -> Any:
    [found] = [r for r in recording.of_type(f"kubernetes:{kind}") if r.inputs["metadata"]["name"] == "gpu-operator"]
    return found


#: The document with `remediation.cloud.provider: azure`.
ON_AZURE = {**DOCUMENT, "remediation": {"cloud": {"provider": "azure"}}}


def test_the_cluster_gives_the_controller_its_identity() -> None:
    recording = run_azure_program(_cluster_program(with_agents(ON_AZURE)), mocks=ClusterMocks())
    [component] = recording.of_type("gpu-operator:index:RemediationIdentity")
    assert component.parent == recording.of_type("gpu-operator:index:GpuCluster")[0].urn
    account = _controller(recording, "core/v1:ServiceAccount")
    assert account.inputs["metadata"]["annotations"]["azure.workload.identity/client-id"] == CLIENT_ID
    deployment = _controller(recording, "apps/v1:Deployment")
    assert deployment.inputs["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    [grant] = recording.of_type(GRANT)
    assert grant.inputs["scope"] == NODE_SCOPE


def test_without_the_setting_the_controller_has_no_azure_identity() -> None:
    recording = run_azure_program(_cluster_program(with_agents(DOCUMENT)), mocks=ClusterMocks())
    assert recording.of_type("gpu-operator:index:RemediationIdentity") == [] and recording.of_type(IDENTITY) == []
    account = _controller(recording, "core/v1:ServiceAccount")
    assert "azure.workload.identity/client-id" not in account.inputs["metadata"].get("annotations", {})
    labels = _controller(recording, "apps/v1:Deployment").inputs["spec"]["template"]["metadata"]["labels"]
    assert "azure.workload.identity/use" not in labels


def test_without_a_controller_no_identity_is_made() -> None:
    assert not parse_config(ON_AZURE).controller_enabled
    recording = run_azure_program(_cluster_program(ON_AZURE), mocks=ClusterMocks())
    assert recording.of_type(IDENTITY) == [] and recording.of_type(GRANT) == []


def test_the_operator_refuses_an_identity_no_controller_would_use() -> None:
    def program() -> None:
        GpuOperator("gpu", {"provider": k8s.Provider("cluster", kubeconfig="{}"), "config": {},
                            "controller_identity": CLIENT_ID})

    with pytest.raises(ComponentArgsError, match=r"controller_identity.*runs no operator controller"):
        run_program(program)
