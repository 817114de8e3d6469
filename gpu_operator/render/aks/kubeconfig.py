"""AKS kubeconfigs: decoding what the credential APIs return, and choosing kubelogin's login method.

`listClusterUserCredential` with `format: exec` returns a kubeconfig whose user runs `kubelogin get-token ...
--login devicecode`: kubelogin prints a code and waits for a person to sign in at a browser, which a `pulumi up`
in CI never does. `kubelogin convert-kubeconfig -l <method>` rewrites that argument; :func:`with_kubelogin_mode`
does the same to the kubeconfig text, so a program (or a consumer stack) can sign in with the Azure CLI's
identity (`azurecli`), a workload identity, a service principal or a managed identity instead.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import PurePosixPath
from typing import Any
from collections.abc import Sequence

import yaml

__all__ = ["decode_kubeconfig", "with_kubelogin_mode", "KUBELOGIN"]

KUBELOGIN = "kubelogin"
_LOGIN_FLAGS = ("--login", "-l")


def decode_kubeconfig(encoded: Sequence[str], credential: str) -> str:
    """The first kubeconfig of an AKS credential list (base64, as the API returns it), decoded."""
    if not encoded:
        raise ValueError(
            f"AKS returned no kubeconfig for {credential}; with local accounts disabled (Entra ID only) the admin "
            "credential does not exist: set aks.credentials to exec"
        )
    try:
        return base64.b64decode(encoded[0], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise ValueError(f"AKS returned a kubeconfig for {credential} that is not base64 text: {error}") from None


def _is_kubelogin(user: Any) -> bool:
    exec_spec = user.get("user", {}).get("exec") if isinstance(user, dict) else None
    return isinstance(exec_spec, dict) and PurePosixPath(str(exec_spec.get("command", ""))).name == KUBELOGIN


def _with_login(args: list[str], mode: str) -> list[str]:
    result, index = [], 0
    while index < len(args):
        arg = args[index]
        if arg in _LOGIN_FLAGS:
            index += 2
            continue
        if arg.startswith("--login="):
            index += 1
            continue
        result.append(arg)
        index += 1
    return [*result, "--login", mode]


def with_kubelogin_mode(kubeconfig: str, mode: str) -> str:
    """The kubeconfig with every kubelogin user signing in with `mode` (other users are left alone)."""
    document = yaml.safe_load(kubeconfig)
    if not isinstance(document, dict):
        raise ValueError("the kubeconfig is not a YAML mapping")
    users = document.get("users") or []
    kubelogin_users = [user for user in users if _is_kubelogin(user)]
    if not kubelogin_users:
        raise ValueError(
            "the kubeconfig has no kubelogin user; AKS returns one for clusters with Entra ID integration only: "
            "use aks.credentials admin or user for this cluster"
        )
    for user in kubelogin_users:
        exec_spec = user["user"]["exec"]
        exec_spec["args"] = _with_login([str(arg) for arg in exec_spec.get("args") or []], mode)
    return yaml.safe_dump(document, sort_keys=False)
