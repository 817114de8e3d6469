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
A `gpu-operator:` key the program does not read (`gpu-operator:confg`) and a config document under another
project's namespace (`myproject:config`) are errors naming the key: rendering the chart defaults over a misspelt
key would review something the stack does not deploy. Other namespaces' settings (`azure-native:location`) belong
to providers and are left alone.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
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
    unread = _unread_settings(settings)
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
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError([Problem(f"config.{keys[0]}", f"is a string that is not JSON ({error.msg} at "
                                       f"character {error.pos}); the program reads it with get_object, which parses "
                                       "JSON: write the document as a YAML mapping instead")], source) from None
    secrets = _secret_paths(value)
    if secrets:
        raise ConfigError([Problem(path, f"is a secret value (secure:); {_DECRYPT_HINT}") for path in secrets], where)
    return StackDocument({} if value is None else value, where, tuple(notes))
