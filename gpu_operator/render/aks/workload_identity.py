"""The operator controller's Azure workload identity: what ARM grants it and how its pods are marked for it.

With `remediation.cloud.provider: azure` the controller reboots and reimages GPU nodes through the scale set API
(:mod:`gpu_operator.agents.cloud.azure_vmss`) as a user-assigned identity of its own, reached through AKS workload
identity: a federated credential trusts the cluster's OIDC issuer for the subject
`system:serviceaccount:<namespace>:gpu-operator` and the audience `api://AzureADTokenExchange`; the ServiceAccount
carries the identity's client id (`azure.workload.identity/client-id`) and the pods the label
`azure.workload.identity/use: "true"`, on which AKS's webhook projects the token and sets the `AZURE_*` variables.

The grant is a custom role with only the calls the controller makes, assigned on the node resource group (where
AKS keeps the scale sets): read an instance and its instance view, restart it, reimage it (only when
`remediation.cloud.reimage` allows), and read the status of the operations it started. ARM serves that status at
`/subscriptions/<id>/providers/Microsoft.Compute/locations/<region>/operations/<id>`, outside the instance's path,
and authorizes the read at the resource group the role is assigned on ("Track asynchronous Azure operations":
tracking needs the permission at resource group level; with resource-level rights an operation can be started but
not followed). Nothing of AKS's own API is granted: the hand-off to AKS node auto-repair needs no call
(:mod:`gpu_operator.agents.cloud.aks_auto_repair`).

Pure: the client id is whatever the caller has (a string, or a Pulumi Output passed through untouched).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gpu_operator.render.k8s import Object

__all__ = [
    "CLIENT_ID_ANNOTATION",
    "TOKEN_AUDIENCE",
    "USE_LABEL",
    "node_resource_group_scope",
    "remediation_role_actions",
    "service_account_subject",
    "with_workload_identity",
]

CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
USE_LABEL = "azure.workload.identity/use"
#: The audience Entra ID expects of a Kubernetes token traded through a federated credential.
TOKEN_AUDIENCE = "api://AzureADTokenExchange"
_INSTANCE = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines"
#: What every cloud repair reads: the instance, its power and provisioning state, its operations' status.
_READS = (f"{_INSTANCE}/read", f"{_INSTANCE}/instanceView/read", "Microsoft.Compute/locations/operations/read")
_RESTART = f"{_INSTANCE}/restart/action"
_REIMAGE = f"{_INSTANCE}/reimage/action"
_SUBSCRIPTION = re.compile(r"^/subscriptions/([^/]+)/", re.IGNORECASE)


def remediation_role_actions(reimage: bool) -> list[str]:
    """The ARM actions of the controller's custom role: reads and restart, and reimage only where it may."""
    return [*_READS, _RESTART, *([_REIMAGE] if reimage else [])]


def service_account_subject(namespace: str, name: str) -> str:
    """The `sub` claim of a ServiceAccount's token, which the federated credential must name exactly."""
    return f"system:serviceaccount:{namespace}:{name}"


def node_resource_group_scope(cluster_id: str, node_resource_group: str) -> str:
    """The node resource group's ARM id, in the subscription of the cluster's id."""
    match = _SUBSCRIPTION.match(cluster_id)
    if match is None or not node_resource_group:
        raise ValueError(f"cannot place the node resource group {node_resource_group!r} of the AKS cluster "
                         f"{cluster_id!r}: the cluster lookup returned no id or no nodeResourceGroup")
    return f"/subscriptions/{match.group(1)}/resourceGroups/{node_resource_group}"


def _uses(obj: Object, service_account: str) -> bool:
    template = obj.get("spec", {}).get("template", {})
    return template.get("spec", {}).get("serviceAccountName") == service_account


def with_workload_identity(objects: Iterable[Object], service_account: str, client_id: Any) -> list[Object]:
    """`objects` with the ServiceAccount `service_account` annotated with `client_id` and the pod templates that
    run as it labelled for the webhook; every other object comes back as it was, and none is changed in place
    (only the path to what changes is copied, so values such as Outputs elsewhere in an object are kept as they
    are)."""
    result: list[Object] = []
    for obj in objects:
        if obj["kind"] == "ServiceAccount" and obj["metadata"]["name"] == service_account:
            metadata = obj["metadata"]
            obj = {**obj, "metadata": {**metadata, "annotations": {
                **metadata.get("annotations", {}), CLIENT_ID_ANNOTATION: client_id}}}
        elif _uses(obj, service_account):
            template = obj["spec"]["template"]
            metadata = template.get("metadata", {})
            labels = {**metadata.get("labels", {}), USE_LABEL: "true"}
            obj = {**obj, "spec": {**obj["spec"], "template": {**template, "metadata": {**metadata, "labels": labels}}}}
        result.append(obj)
    return result
