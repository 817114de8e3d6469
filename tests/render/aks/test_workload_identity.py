"""The controller's workload identity: the grant's actions, the federated subject, and the marks on its objects.

Facts: AKS workload identity (Microsoft's "Use Microsoft Entra Workload ID with AKS"): the ServiceAccount annotation
`azure.workload.identity/client-id`, the pod label `azure.workload.identity/use: "true"`, the audience
`api://AzureADTokenExchange`, the subject `system:serviceaccount:<namespace>:<name>`. Azure RBAC operations of
Microsoft.Compute for scale set VMs (`.../virtualMachines/read`, `/instanceView/read`, `/restart/action`,
`/reimage/action`) and `Microsoft.Compute/locations/operations/read` for the status of an asynchronous operation.
"""

from __future__ import annotations

from gpu_operator.render.aks.workload_identity import (
    CLIENT_ID_ANNOTATION,
    USE_LABEL,
    node_resource_group_scope,
    remediation_role_actions,
    service_account_subject,
    with_workload_identity,
)
from gpu_operator.config import parse_config
from gpu_operator.render.registry import render_operands
from tests.support.agents import with_agents

VMSS_VM = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines"


def test_the_role_holds_only_the_calls_the_controller_makes() -> None:
    reads = [f"{VMSS_VM}/read", f"{VMSS_VM}/instanceView/read", "Microsoft.Compute/locations/operations/read"]
    assert remediation_role_actions(reimage=True) == [*reads, f"{VMSS_VM}/restart/action", f"{VMSS_VM}/reimage/action"]
    assert remediation_role_actions(reimage=False) == [*reads, f"{VMSS_VM}/restart/action"]
    assert not [a for a in remediation_role_actions(True) if "*" in a or "ContainerService" in a or "/delete" in a]


def test_subject_and_scope() -> None:
    assert service_account_subject("gpu-operator", "gpu-operator") == "system:serviceaccount:gpu-operator:gpu-operator"
    cluster = ("/subscriptions/9b4c2a55-0c3e-4f57-8d1e-3f5a9c0d7e21/resourcegroups/rg-gpu/providers/"
               "Microsoft.ContainerService/managedClusters/aks-gpu")
    assert node_resource_group_scope(cluster, "MC_rg-gpu_aks-gpu_westeurope") == (
        "/subscriptions/9b4c2a55-0c3e-4f57-8d1e-3f5a9c0d7e21/resourceGroups/MC_rg-gpu_aks-gpu_westeurope")


def test_only_the_controllers_account_and_pods_are_marked_and_nothing_in_place() -> None:
    objects = [o for operand in render_operands(parse_config(with_agents())) for o in operand.objects]
    client_id = object()  # what the stack passes: an Output, carried through untouched
    marked = with_workload_identity(objects, "gpu-operator", client_id)
    changed = [(new["kind"], new["metadata"]["name"]) for old, new in zip(objects, marked, strict=True) if new is not old]
    assert changed == [("ServiceAccount", "gpu-operator"), ("Deployment", "gpu-operator")]
    account = next(o for o in marked if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "gpu-operator")
    assert account["metadata"]["annotations"][CLIENT_ID_ANNOTATION] is client_id
    deployment = next(o for o in marked if o["kind"] == "Deployment" and o["metadata"]["name"] == "gpu-operator")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels[USE_LABEL] == "true" and labels["app"] == "gpu-operator"
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "gpu-operator"}}  # the selector is untouched
    assert not any(CLIENT_ID_ANNOTATION in o["metadata"].get("annotations", {}) for o in objects)
    assert not any(USE_LABEL in o.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
                   for o in objects)
