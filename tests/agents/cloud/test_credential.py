"""The controller's credential is its workload identity, made from what AKS's webhook injects, or a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.identity import WorkloadIdentityCredential

from gpu_operator.agents.cloud.credential import CredentialSetupError, workload_identity_credential


def _environ(token_file: Path) -> dict[str, str]:
    return {"AZURE_CLIENT_ID": "11111111-2222-3333-4444-555555555555",
            "AZURE_TENANT_ID": "66666666-7777-8888-9999-000000000000",
            "AZURE_FEDERATED_TOKEN_FILE": str(token_file)}


def test_the_webhooks_variables_make_a_workload_identity_credential(tmp_path: Path) -> None:
    token = tmp_path / "azure-identity-token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.e30.sig")
    assert isinstance(workload_identity_credential(_environ(token)), WorkloadIdentityCredential)


@pytest.mark.parametrize("missing", [["AZURE_CLIENT_ID"], ["AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE"]])
def test_missing_variables_are_named_with_the_fix(tmp_path: Path, missing: list[str]) -> None:
    environ = {k: v for k, v in _environ(tmp_path / "token").items() if k not in missing}
    with pytest.raises(CredentialSetupError) as raised:
        workload_identity_credential(environ)
    message = str(raised.value)
    assert message.startswith(f"{', '.join(missing)} not set")
    assert "azure.workload.identity/use" in message and "azure.workload.identity/client-id" in message


def test_a_token_file_that_is_not_there_is_named(tmp_path: Path) -> None:
    with pytest.raises(CredentialSetupError, match="projected token volume is not mounted"):
        workload_identity_credential(_environ(tmp_path / "absent"))
