"""Kubernetes API shapes that appear inside config: env vars, resources, tolerations, pod security contexts.

These mirror the core/v1 types field for field (the ClusterPolicy CRD embeds them), so a value copied from a
Pod spec is accepted unchanged and renders back unchanged, quantities in the API server's spelling (`1024Mi` is
rendered `1Gi`, :mod:`gpu_operator.render.stored`).

Strings that the API server or another program parses again are checked here with the same rules
(:mod:`gpu_operator.facts`): quantities, names of the objects a field refers to (ConfigMaps, Secrets, priority
and runtime classes: DNS-1123 subdomains), label maps (qualified keys, label values), annotation keys, and label
selectors as the drain helper reads them. Counts that may be percentages (`maxUnavailable`, `maxSurge`) are
checked by :func:`count_or_percent`, which also refuses a 0 that would mean "never".
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, PlainValidator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.facts.kube_names import (
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
    label_value_problem,
    qualified_name_problem,
)
from gpu_operator.facts.label_selector import parse_selector
from gpu_operator.facts.quantity import QuantityError, canonical_quantity

__all__ = [
    "EnvVar",
    "Quantity",
    "ResourceRequirements",
    "Toleration",
    "SELinuxOptions",
    "SeccompProfile",
    "AppArmorProfile",
    "Sysctl",
    "WindowsSecurityContextOptions",
    "PodSecurityContext",
    "RelabelConfig",
    "ImagePullPolicy",
    "AnnotationMap",
    "DnsLabel",
    "DnsSubdomain",
    "EnvList",
    "check_env_name",
    "distinct_env_names",
    "LabelMap",
    "ObjectName",
    "PodSelector",
    "count_or_percent",
]

_QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?\Z")
#: A size written with a byte unit, or a suffix in the wrong case (`10GB`, `10gib`, `512mb`).
_BYTE_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([kmgtpe])(i?)b?", re.IGNORECASE)
_PERCENT = re.compile(r"^([0-9]+)%\Z")
#: An environment variable name as Kubernetes validated it before 1.34 relaxed the rule (IsEnvVarName), so a
#: name is accepted by every API server this package supports and usable from a shell.
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z")


def _quantity_hint(text: str) -> str:
    """The quantities a size written the way people write bytes most likely meant."""
    match = _BYTE_SIZE.fullmatch(text)
    if match is None:
        return ""
    number, unit = match.group(1), match.group(2).upper()
    return f"; did you mean {number}{unit}i (binary) or {number}{'k' if unit == 'K' else unit} (decimal)?"


def _quantity(value: object) -> int | str:
    """The API's quantity pattern, and a number the API server stores as written (not `1000E`, which it stores as
    `1`); the render writes it in the server's spelling. A YAML number with a fraction is not converted."""
    if isinstance(value, float):
        raise ValueError(f"{value} is read as a number with a fraction, which is not converted: quote it as a "
                         f"quantity, e.g. '{value:g}' or with a suffix such as '500m'")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        got = str(value).lower() if isinstance(value, bool) else "a mapping or list"
        raise ValueError(f"must be a quantity such as 500m, 1Gi or 2, got {got}")
    if isinstance(value, str) and not _QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 1Gi, 2){_quantity_hint(value)}")
    try:
        canonical_quantity(value)
    except QuantityError as error:
        raise ValueError(str(error)) from None
    return value


def _dns_label(value: str) -> str:
    if not is_dns_label(value):
        raise ValueError(f"{value!r} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)")
    return value


def _dns_subdomain(value: str) -> str:
    if not is_dns_subdomain(value):
        raise ValueError(f"{value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.')")
    return value


def _object_name(value: str) -> str:
    """The name of an object a field refers to; empty means none."""
    if value and not is_dns_subdomain(value):
        hint = f" (perhaps {value.lower()!r})" if is_dns_subdomain(value.lower()) else ""
        raise ValueError(f"{value!r} is not an object name: lower-case letters, digits, '-' and '.', at most 253, "
                         f"starting and ending with a letter or digit{hint}")
    return value


def _label_map(values: dict[str, str]) -> dict[str, str]:
    for key, value in values.items():
        _annotation_key(key)
        problem = label_value_problem(value)
        if problem is not None:
            raise ValueError(f"{key}: {problem}")
    return values


def _annotation_key(key: str) -> str:
    problem = qualified_name_problem(key, "label or annotation key")
    if problem is not None:
        raise ValueError(problem)
    return key


def _annotation_map(values: dict[str, str]) -> dict[str, str]:
    for key in values:
        _annotation_key(key)
    return values


def _pod_selector(text: str) -> str:
    try:
        parse_selector(text)
    except ValueError as error:
        raise ValueError(f"{text!r} is not a label selector ({error}): write it as `kubectl get pods -l` takes it, "
                         "e.g. 'app=web,tier in (a,b),!canary'") from None
    return text


def check_env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError(f"{value!r} is not an environment variable name: letters, digits, '_', '-' and '.', not "
                         "starting with a digit")
    return value


def distinct_env_names(names: list[str]) -> None:
    """Each variable once: Kubernetes keeps the last of two, so the first would silently have no effect."""
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"variable listed twice: {', '.join(twice)} (the later one would silently hide the "
                         "first); keep one")


def count_or_percent(value: int | str, what: str, zero: str | None = None) -> int | str:
    """An int-or-string such as `maxUnavailable`: a count (a number or digit string) or a percentage of at most
    100%. `zero` says why 0 is refused where it would mean "never" (None: 0 is allowed)."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number of {what} such as 1 or a percentage such as '25%', got "
                         f"{str(value).lower()}")
    text = str(value)
    percent = _PERCENT.match(text)
    if not (text.isdigit() and text.isascii() or percent):
        raise ValueError(f"{value!r} must be a number of {what} such as 1 or a percentage such as '25%'")
    if percent and int(percent.group(1)) > 100:
        raise ValueError(f"{text} is more than 100% of the {what}: give at most '100%'")
    if zero is not None and int(percent.group(1) if percent else text) == 0:
        raise ValueError(f"{value!r} {zero}")
    return value


Quantity = Annotated[int | str, PlainValidator(_quantity)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
#: The name of a ConfigMap, Secret or class a field refers to; "" where the field is optional.
ObjectName = Annotated[str, AfterValidator(_object_name)]
#: Labels: qualified keys and label values.
LabelMap = Annotated[dict[str, str], AfterValidator(_label_map)]
#: Annotations: qualified keys, any value.
AnnotationMap = Annotated[dict[str, str], AfterValidator(_annotation_map)]
#: A pod label selector in kubectl's text form, as the drain helper parses it ("" selects every pod).
PodSelector = Annotated[str, AfterValidator(_pod_selector)]
ImagePullPolicy = Literal["Always", "IfNotPresent", "Never"]


class EnvVar(ConfigModel):
    """One `{name, value}` environment variable, as the ClusterPolicy `env` lists carry them."""

    name: Annotated[str, AfterValidator(check_env_name)]
    value: str | None = None


def _env_list(values: tuple[EnvVar, ...]) -> tuple[EnvVar, ...]:
    distinct_env_names([var.name for var in values])
    return values


#: An operand's `env`: valid names, each once.
EnvList = Annotated[tuple[EnvVar, ...], AfterValidator(_env_list)]


class ResourceRequirements(ConfigModel):
    """Container resource limits and requests (`cpu`, `memory`, extended resources)."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None


class Toleration(ConfigModel):
    """A pod toleration (core/v1 Toleration), held to the API server's rules (core validation
    `ValidateTolerations`): a qualified key; no key only with `Exists` (every taint); no value with `Exists`, a label
    value with `Equal`; `tolerationSeconds` only with `NoExecute`."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    toleration_seconds: int | None = None
    value: str | None = None

    @model_validator(mode="after")
    def _api_rules(self) -> Self:
        key, value, exists = self.key or "", self.value or "", self.operator == "Exists"
        if key and not is_qualified_name(key):
            raise ValueError(f"key {key!r} is not a taint key such as 'nvidia.com/gpu' (a qualified name)")
        if not key and not exists:
            raise ValueError("a toleration without key must have operator: Exists (it then tolerates every taint); "
                             "give the key of the taint, or operator: Exists")
        if exists and value:
            raise ValueError(f"operator Exists takes no value (got {value!r}): remove value, or use operator: Equal")
        if not exists and not is_label_value(value):
            raise ValueError(f"value {value!r} is not a taint value (at most 63 letters, digits, '-', '_' and '.')")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds applies to effect NoExecute only (how long a pod stays on a node "
                             "tainted NoExecute): set effect: NoExecute, or remove tolerationSeconds")
        return self


class SELinuxOptions(ConfigModel):
    level: str | None = None
    role: str | None = None
    type: str | None = None
    user: str | None = None


class SeccompProfile(ConfigModel):
    localhost_profile: str | None = None
    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]


class AppArmorProfile(ConfigModel):
    localhost_profile: str | None = None
    type: Literal["RuntimeDefault", "Unconfined", "Localhost"]


class Sysctl(ConfigModel):
    name: str
    value: str


class WindowsSecurityContextOptions(ConfigModel):
    gmsa_credential_spec: str | None = None
    gmsa_credential_spec_name: str | None = None
    host_process: bool | None = None
    run_as_user_name: str | None = None


class PodSecurityContext(ConfigModel):
    """The pod-level security context applied to every operand DaemonSet (`daemonsets.podSecurityContext`)."""

    app_armor_profile: AppArmorProfile | None = None
    fs_group: int | None = None
    fs_group_change_policy: Literal["OnRootMismatch", "Always"] | None = None
    run_as_group: int | None = None
    run_as_non_root: bool | None = None
    run_as_user: int | None = None
    se_linux_change_policy: Literal["MountOption", "Recursive"] | None = None
    se_linux_options: SELinuxOptions | None = None
    seccomp_profile: SeccompProfile | None = None
    supplemental_groups: tuple[int, ...] | None = None
    supplemental_groups_policy: Literal["Merge", "Strict"] | None = None
    sysctls: tuple[Sysctl, ...] | None = None
    windows_options: WindowsSecurityContextOptions | None = None


RelabelAction = Literal[
    "replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod", "HashMod", "labelmap", "LabelMap",
    "labeldrop", "LabelDrop", "labelkeep", "LabelKeep", "lowercase", "Lowercase", "uppercase", "Uppercase",
    "keepequal", "KeepEqual", "dropequal", "DropEqual",
]


class RelabelConfig(ConfigModel):
    """A Prometheus Operator relabeling rule (monitoring.coreos.com/v1 RelabelConfig)."""

    action: RelabelAction = "replace"
    modulus: int | None = Field(default=None, ge=0)
    regex: str | None = None
    replacement: str | None = None
    separator: str | None = None
    source_labels: tuple[str, ...] | None = None
    target_label: str | None = None
