"""The `aks` section: credentials, kubelogin's login method, protection, and their errors."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError
from gpu_operator.config.aks import parse_aks

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}


def test_defaults_keep_what_worked_and_protect() -> None:
    aks = parse_aks(AKS)
    assert (aks.credentials, aks.effective_kubelogin_mode, aks.protect) == ("admin", None, True)


def test_exec_defaults_to_the_azure_cli_login() -> None:
    assert parse_aks({**AKS, "credentials": "exec"}).effective_kubelogin_mode == "azurecli"
    aks = parse_aks({**AKS, "credentials": "exec", "kubeloginMode": "workloadidentity"})
    assert aks.effective_kubelogin_mode == "workloadidentity"


@pytest.mark.parametrize("section, path, text", [
    ({**AKS, "credentials": "root"}, "aks.credentials", "'admin', 'user' or 'exec'"),
    ({**AKS, "kubeloginMode": "azurecli"}, "aks.kubeloginMode", "set credentials: exec or remove kubeloginMode"),
    ({**AKS, "credentials": "user", "kubeloginMode": "spn"}, "aks.kubeloginMode", "credentials is 'user'"),
    ({**AKS, "credentials": "exec", "kubeloginMode": "browser"}, "aks.kubeloginMode", "'azurecli'"),
    ({**AKS, "protect": "maybe"}, "aks.protect", "boolean"),
])
def test_errors_name_the_field_and_the_fix(section: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_aks(section)
    [problem] = error.value.problems
    assert problem.path == path and text in problem.message
