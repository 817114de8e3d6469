"""Pulumi stack files: the config document that `stacks/__main__.py` deploys, read without the Pulumi CLI.

A stack file (`Pulumi.<stack>.yaml`) keeps its settings under a top-level `config:` key, each named
`<namespace>:<key>`. The program reads the config document with `pulumi.Config("gpu-operator").get_object("config")`,
so the document is the value of `gpu-operator:config` (or of a bare `config` key, which Pulumi puts in the project's
namespace, `gpu-operator`). `get_object` takes a structured value as it is and parses a string value as JSON (what
`pulumi config set gpu-operator:config '{...}'` stores); a stack without the key deploys the empty document, the
chart defaults. A config document never has a top-level `config` key, so the two cannot be confused.

Secret values (`secure: v1:...`) are encrypted with the stack's secrets provider and cannot be read offline; the
program's own settings (`gpu-operator:subscriptionId`, `gpu-operator:kubeconfig`, `gpu-operator:adoptExistingObjects`,
`gpu-operator:waitForDaemonsets`) choose where and how to deploy, not what, and do not change the rendered objects.
They are still checked as the program reads them (`Config.get_bool` takes `true`/`false` only, the subscription is
an Azure subscription id), so a typo fails here rather than at `pulumi up`. A credential written in plain text (a
setting named like a password, secret, token or key, or a kubeconfig carrying a token, a password or a client key)
is refused: anyone who reads the file can use it, so it is stored with `pulumi config set --secret`. A document
given as a JSON string is held to the YAML rules too: a key written twice is refused rather than the last one
silently kept.
A `gpu-operator:` key the program does not read (`gpu-operator:confg`) and a config document under another
project's namespace (`myproject:config`) are errors naming the key: rendering the chart defaults over a misspelt
key would review something the stack does not deploy. Other namespaces' settings (`azure-native:location`) belong
to providers and are left alone.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_operator.config.errors import ConfigError, Problem, format_path

__all__ = ["CONFIG_KEY", "TARGET_KEYS", "StackDocument", "is_stack_file", "stack_document"]

NAMESPACE = "gpu-operator"
#: The stack setting that holds the config document.
CONFIG_KEY = f"{NAMESPACE}:config"
#: The program's other settings (see stacks/__main__.py); they pick the target and how it is deployed, not the objects.
TARGET_KEYS = frozenset({f"{NAMESPACE}:{key}" for key in (
    "subscriptionId", "kubeconfig", "adoptExistingObjects", "waitForDaemonsets")})
#: Top-level keys of a stack file besides `config` (Pulumi's project stack schema).
_STACK_FILE_KEYS = frozenset({"config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"})

#: How stacks/__main__.py reads each of its other settings, as a check: the problem with a plain value, or None.
_SETTING_CHECKS: dict[str, Callable[[Any], str | None]] = {}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: Words in a setting's name that say its value is a credential.
_CREDENTIAL_WORDS = ("password", "secret", "token", "apikey", "accesskey", "privatekey", "clientkey", "credential")
#: What in a kubeconfig's text is a credential (a bearer token, a password, a client certificate's key).
_KUBECONFIG_CREDENTIALS = re.compile(r"^\s*(token|password|client-key-data|client-key)\s*:\s*\S", re.MULTILINE)


def _boolean_setting(value: Any) -> str | None:
    """`Config.get_bool`: a YAML boolean (stored as `true`/`false`), or the strings `true`, `True`, `false`,
    `False`; anything else raises ConfigTypeError when the program starts."""
    if isinstance(value, bool) or value in ("true", "True", "false", "False"):
        return None
    return f"is {value!r}, and the program reads it as a boolean: write true or false"


def _subscription_setting(value: Any) -> str | None:
    if isinstance(value, str) and _UUID.fullmatch(value):
        return None
    return (f"is {value!r}, not an Azure subscription id (a GUID such as 00000000-0000-0000-0000-000000000000): "
            "`az account show --query id -o tsv` prints yours")


def _kubeconfig_setting(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be the kubeconfig's text (or its path) as a string"
    return None


_SETTING_CHECKS.update({
    f"{NAMESPACE}:subscriptionId": _subscription_setting,
    f"{NAMESPACE}:kubeconfig": _kubeconfig_setting,
    f"{NAMESPACE}:adoptExistingObjects": _boolean_setting,
    f"{NAMESPACE}:waitForDaemonsets": _boolean_setting,
})

_DECRYPT_HINT = (
    "it is encrypted with the stack's secrets provider and cannot be decrypted offline: keep the config document "
    "in plain text (secrets belong in keys of their own), or write the decrypted document to a file with "
    f"`pulumi config get {CONFIG_KEY} > config.yaml` and render that file"
)


@dataclass(frozen=True)
class StackDocument:
    """The config document a stack file holds, where it came from, and what the reader must be told."""

    document: Any
    source: str
    notes: tuple[str, ...]


def is_stack_file(data: Any) -> bool:
    """A mapping with a top-level `config:` mapping of namespaced keys (or only stack-file keys)."""
    if not isinstance(data, Mapping) or "config" not in data:
        return False
    settings = data["config"]
    if settings is None:
        return set(data) <= _STACK_FILE_KEYS
    if not isinstance(settings, Mapping):
        return False
    return any(isinstance(key, str) and ":" in key for key in settings) or set(data) <= _STACK_FILE_KEYS


def _is_secret(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _secret_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[str]:
    if _is_secret(value):
        return [format_path(path)]
    if isinstance(value, Mapping):
        return [p for key, item in value.items() for p in _secret_paths(item, (*path, str(key)))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _secret_paths(item, (*path, index))]
    return []


def _is_plain_credential(key: str, value: Any) -> bool:
    name = key.partition(":")[2].replace("-", "").replace("_", "").lower()
    if not isinstance(value, str) or not value.strip():
        return False
    if name.endswith("kubeconfig"):
        return _KUBECONFIG_CREDENTIALS.search(value) is not None
    return any(word in name for word in _CREDENTIAL_WORDS)


def _setting_problems(settings: Mapping[str, Any]) -> list[Problem]:
    """The program's settings of the wrong type, and credentials in plain text (any namespace's)."""
    problems: list[Problem] = []
    for key, value in settings.items():
        if not isinstance(key, str) or _is_secret(value):
            continue
        check = _SETTING_CHECKS.get(key)
        message = check(value) if check is not None else None
        if message is not None:
            problems.append(Problem(f"config.{key}", message))
        elif _is_plain_credential(key, value):
            problems.append(Problem(f"config.{key}", "is a credential in plain text, which anyone who reads the "
                                                     "stack file can use: store it encrypted with `pulumi config "
                                                     f"set --secret {key}` (it replaces the plain value), and "
                                                     "rotate it if the file was shared"))
    return problems


def _json_document(text: str) -> tuple[Any, list[Problem]]:
    """The document a JSON string holds, and a problem for every key written twice in one object (JSON keeps the
    last one silently; the YAML reader refuses it, so the string form does too)."""
    twice: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in items:
            if key in found:
                twice.setdefault(id(found), []).append(key)
            found[key] = value
        return found

    document = json.loads(text, object_pairs_hook=pairs)
    problems: list[Problem] = []

    def walk(value: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(value, dict):
            problems.extend(Problem(format_path((*path, key)), "duplicate key in the JSON string: JSON keeps only "
                                                               "the last one, silently; remove one, or merge them")
                            for key in twice.get(id(value), ()))
            for key, item in value.items():
                walk(item, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*path, index))

    walk(document, ())
    return document, problems


def _unread_settings(settings: Mapping[str, Any]) -> list[Problem]:
    """`gpu-operator:` keys the program does not read, and config documents under another project's namespace."""
    read = sorted({CONFIG_KEY, *TARGET_KEYS})
    problems: list[Problem] = []
    for key in settings:
        if not isinstance(key, str) or ":" not in key:
            continue
        namespace, _, name = key.partition(":")
        if namespace == NAMESPACE and key not in read:
            near = difflib.get_close_matches(key, read, n=1, cutoff=0.6)
            fix = f"did you mean {near[0]}?" if near else f"the program reads {', '.join(read)}"
            problems.append(Problem(f"config.{key}", f"is not a setting stacks/__main__.py reads: {fix}"))
        elif namespace != NAMESPACE and name == "config":
            problems.append(Problem(f"config.{key}", f"is another project's setting: this project is {NAMESPACE}, "
                                                     f"whose program reads its document from {CONFIG_KEY}; rename "
                                                     "the key"))
    return problems


def stack_document(data: Mapping[str, Any], source: str) -> StackDocument:
    """The config document of a stack file (see :func:`is_stack_file`); ConfigError when it cannot be read."""
    settings: Mapping[str, Any] = data.get("config") or {}
    where = f"{source} ({CONFIG_KEY})"
    keys = [key for key in (CONFIG_KEY, "config") if key in settings]
    if len(keys) > 1:
        raise ConfigError([Problem(f"config.{CONFIG_KEY}", "is given twice, also as the bare key `config` (which "
                                   f"Pulumi reads as {CONFIG_KEY}); keep one")], source)
    unread = _unread_settings(settings) + _setting_problems(settings)
    if unread:
        raise ConfigError(unread, source)
    notes: list[str] = []
    notes.extend(
        f"{key} is not a stack-file setting and is not read (the stack's settings go under config:)"
        for key in data if key not in _STACK_FILE_KEYS
    )
    if "environment" in data:
        notes.append("the stack imports Pulumi ESC environments (environment:), which are not read offline: "
                     "settings they provide are not part of this render")
    if not keys:
        notes.append(f"the stack sets no {CONFIG_KEY}: rendering what stacks/__main__.py deploys for it, the empty "
                     "document (the GPU Operator chart's defaults)")
        return StackDocument({}, where, tuple(notes))
    value = settings[keys[0]]
    if _is_secret(value):
        raise ConfigError([Problem(f"config.{keys[0]}", f"is a secret value (secure:); {_DECRYPT_HINT}")], source)
    if isinstance(value, str):
        try:
            value, duplicates = _json_document(value)
        except json.JSONDecodeError as error:
            raise ConfigError([Problem(f"config.{keys[0]}", f"is a string that is not JSON ({error.msg} at "
                                       f"character {error.pos}); the program reads it with get_object, which parses "
                                       "JSON: write the document as a YAML mapping instead")], source) from None
        if duplicates:
            raise ConfigError(duplicates, where)
    secrets = _secret_paths(value)
    if secrets:
        raise ConfigError([Problem(path, f"is a secret value (secure:); {_DECRYPT_HINT}") for path in secrets], where)
    return StackDocument({} if value is None else value, where, tuple(notes))
