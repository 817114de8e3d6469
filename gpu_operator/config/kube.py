"""Kubernetes API shapes that appear inside config: env vars, resources, tolerations, pod security contexts.

These mirror the core/v1 types field for field (the ClusterPolicy CRD embeds them), so a value copied from a
Pod spec is accepted unchanged and renders back unchanged, quantities in the API server's spelling (`1024Mi` is
rendered `1Gi`, :mod:`gpu_operator.render.stored`).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from gpu_operator.config.base import ConfigModel
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
    "DnsLabel",
    "DnsSubdomain",
    "LabelMap",
]

_QUANTITY = re.compile(r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?\Z")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def _quantity(value: int | str) -> int | str:
    """The API's quantity pattern, and a number the API server stores as written (not `1000E`, which it stores as
    `1`); the render writes it in the server's spelling."""
    if isinstance(value, str) and not _QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 1Gi, 2)")
    try:
        canonical_quantity(value)
    except QuantityError as error:
        raise ValueError(str(error)) from None
    return value


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(f"{value!r} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)")
    return value


def _dns_subdomain(value: str) -> str:
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        raise ValueError(f"{value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.')")
    return value


Quantity = Annotated[int | str, AfterValidator(_quantity)]
DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsSubdomain = Annotated[str, AfterValidator(_dns_subdomain)]
LabelMap = dict[str, str]
ImagePullPolicy = Literal["Always", "IfNotPresent", "Never"]


class EnvVar(ConfigModel):
    """One `{name, value}` environment variable, as the ClusterPolicy `env` lists carry them."""

    name: str = Field(min_length=1)
    value: str | None = None


class ResourceRequirements(ConfigModel):
    """Container resource limits and requests (`cpu`, `memory`, extended resources)."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None


class Toleration(ConfigModel):
    """A pod toleration (core/v1 Toleration)."""

    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    toleration_seconds: int | None = None
    value: str | None = None


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
