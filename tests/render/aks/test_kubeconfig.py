"""AKS kubeconfigs: decoding credential lists, and switching kubelogin's login method as `convert-kubeconfig` does."""

from __future__ import annotations

import base64

import pytest
import yaml

from gpu_operator.render.aks.kubeconfig import decode_kubeconfig, with_kubelogin_mode
from tests.support.azure_mocks import EXEC_KUBECONFIG, KUBECONFIG


def _args(kubeconfig: str) -> list[str]:
    return yaml.safe_load(kubeconfig)["users"][0]["user"]["exec"]["args"]


def test_decode_takes_the_first_credential() -> None:
    encoded = base64.b64encode(b"apiVersion: v1\n").decode()
    assert decode_kubeconfig([encoded, ""], "the cluster admin") == "apiVersion: v1\n"


def test_an_empty_credential_list_says_why_and_what_to_do() -> None:
    with pytest.raises(ValueError, match="local accounts disabled.*set aks.credentials to exec"):
        decode_kubeconfig([], "the cluster admin")


def test_a_credential_that_is_not_base64_is_refused() -> None:
    with pytest.raises(ValueError, match="not base64 text"):
        decode_kubeconfig(["not base64!"], "the cluster user")


@pytest.mark.parametrize("mode", ["azurecli", "workloadidentity", "msi"])
def test_the_login_method_is_replaced_once(mode: str) -> None:
    args = _args(with_kubelogin_mode(EXEC_KUBECONFIG, mode))
    assert args.count("--login") == 1 and args[-2:] == ["--login", mode]
    assert "devicecode" not in args
    assert args[:2] == ["get-token", "--environment"]  # everything else is kept, in order
    assert "--server-id" in args and "--tenant-id" in args


@pytest.mark.parametrize("login", [["-l", "devicecode"], ["--login=devicecode"], []])
def test_every_spelling_of_the_login_flag(login: list[str]) -> None:
    document = yaml.safe_load(EXEC_KUBECONFIG)
    document["users"][0]["user"]["exec"]["args"] = ["get-token", *login, "--server-id", "x"]
    args = _args(with_kubelogin_mode(yaml.safe_dump(document), "azurecli"))
    assert args == ["get-token", "--server-id", "x", "--login", "azurecli"]


def test_a_kubeconfig_without_kubelogin_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="no kubelogin user.*Entra ID.*admin or user"):
        with_kubelogin_mode(KUBECONFIG, "azurecli")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        with_kubelogin_mode("- a\n", "azurecli")
