"""The controller's Azure credential: Microsoft Entra Workload ID, and nothing else.

AKS's workload identity webhook mutates every pod labelled `azure.workload.identity/use: "true"` whose
ServiceAccount carries `azure.workload.identity/client-id`: it projects a ServiceAccount token into the pod and sets
`AZURE_CLIENT_ID`, `AZURE_TENANT_ID`, `AZURE_FEDERATED_TOKEN_FILE` (and `AZURE_AUTHORITY_HOST`). azure-identity's
`WorkloadIdentityCredential` trades that token for an Entra ID token of the user-assigned identity the stack
creates (`remediation.cloud.provider: azure`), whose only rights are reading, restarting and reimaging the scale
set instances of the node resource group.

`DefaultAzureCredential` is deliberately not used: where the webhook did not inject the variables it would fall
through to the managed identity of the node the pod runs on (the kubelet identity), acting with another identity's
rights, or fail only at the first token request. Here a missing variable is named at once, with the fix.
The SDK is imported only when the credential is made, so agents that never reach Azure never load it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

__all__ = ["CredentialSetupError", "WORKLOAD_IDENTITY_ENV", "workload_identity_credential"]

#: What the workload identity webhook injects, all of which the credential needs.
WORKLOAD_IDENTITY_ENV = ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE")


class CredentialSetupError(RuntimeError):
    """The pod was not given a workload identity."""


def workload_identity_credential(environ: Mapping[str, str] | None = None) -> TokenCredential:
    """A `WorkloadIdentityCredential` from the webhook's variables; :class:`CredentialSetupError` naming what is
    missing and how to get it otherwise."""
    environ = os.environ if environ is None else environ
    missing = [name for name in WORKLOAD_IDENTITY_ENV if not environ.get(name)]
    if missing:
        raise CredentialSetupError(
            f"{', '.join(missing)} not set: the pod has no Azure workload identity. Its ServiceAccount needs the "
            "annotation azure.workload.identity/client-id and the pod the label azure.workload.identity/use: "
            "\"true\" (the stack sets both with remediation.cloud.provider: azure), on a cluster with the OIDC "
            "issuer and workload identity enabled")
    token_file = environ["AZURE_FEDERATED_TOKEN_FILE"]
    if not os.path.isfile(token_file):
        raise CredentialSetupError(f"AZURE_FEDERATED_TOKEN_FILE names {token_file}, which does not exist: the "
                                   "workload identity webhook's projected token volume is not mounted")
    from azure.identity import WorkloadIdentityCredential  # the SDK only where Azure is used

    return WorkloadIdentityCredential(tenant_id=environ["AZURE_TENANT_ID"], client_id=environ["AZURE_CLIENT_ID"],
                                      token_file_path=token_file)
