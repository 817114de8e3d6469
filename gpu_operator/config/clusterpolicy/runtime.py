"""Cluster-wide ClusterPolicy sections: operator, daemonsets, container toolkit, CDI, host paths, PSA/PSP.

These sections shape every operand rather than one: the runtime class the operands run under, the tolerations
and update strategy every DaemonSet gets, and where the host's root, driver and kubelet directories live.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import ImageFields, OperandSpec
from gpu_operator.config.kube import (
    AnnotationMap,
    DnsLabel,
    LabelMap,
    ObjectName,
    PodSecurityContext,
    RelabelConfig,
    Toleration,
    count_or_percent,
)

__all__ = [
    "ServiceMonitorConfig",
    "OperatorMetrics",
    "InitContainerSpec",
    "OperatorSpec",
    "RollingUpdateSpec",
    "DaemonsetsSpec",
    "ToolkitSpec",
    "CdiSpec",
    "HostPathsSpec",
    "PsaSpec",
    "PspSpec",
    "check_max_unavailable",
]

_DURATION = re.compile(r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)\Z")
#: Why a DaemonSet's `rollingUpdate.maxUnavailable` may not be 0: the API server refuses it while `maxSurge` is 0
#: (apps/validation `ValidateRollingUpdateDaemonSet`), and the operands' DaemonSets surge no pods.
_NO_DAEMONSET_ROLLOUT = ("would let no pod be replaced, and the API server refuses it for a DaemonSet without "
                         "maxSurge: give at least 1")


def check_max_unavailable(value: int | str, zero: str | None = _NO_DAEMONSET_ROLLOUT) -> int | str:
    """An int-or-string like Kubernetes' maxUnavailable: a count or a percentage of at most 100% of the nodes
    (apps/validation `ValidatePositiveIntOrPercent`, `IsNotMoreThan100Percent`); 0 is refused with `zero`."""
    return count_or_percent(value, "nodes", zero)


class ServiceMonitorConfig(ConfigModel):
    """Prometheus Operator ServiceMonitor settings for an operand's metrics Service."""

    enabled: bool | None = None
    interval: str | None = None
    scrape_timeout: str | None = None
    honor_labels: bool | None = None
    additional_labels: LabelMap | None = None
    relabelings: tuple[RelabelConfig, ...] | None = None

    @field_validator("interval", "scrape_timeout")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and not _DURATION.match(value):
            raise ValueError(f"{value!r} is not a Prometheus duration such as '15s' or '1m'")
        return value


class OperatorMetrics(ConfigModel):
    service_monitor: ServiceMonitorConfig | None = None


class InitContainerSpec(ImageFields):
    """Deprecated in the CRD; accepted for compatibility and not rendered."""


class OperatorSpec(ConfigModel):
    """The `operator` section: settings that apply to all operands."""

    default_runtime: Literal["docker", "crio", "containerd"] | None = None
    runtime_class: DnsLabel = Field(default="nvidia", description="the RuntimeClass and its runtime handler")
    use_ocp_driver_toolkit: bool = Field(default=False, alias="use_ocp_driver_toolkit")
    init_container: InitContainerSpec | None = None
    labels: LabelMap | None = None
    annotations: AnnotationMap | None = None
    metrics: OperatorMetrics | None = None


class RollingUpdateSpec(ConfigModel):
    max_unavailable: str = "1"

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _max_unavailable(cls, value: str) -> str:
        return str(check_max_unavailable(value))


class DaemonsetsSpec(ConfigModel):
    """Settings applied to every operand DaemonSet."""

    labels: LabelMap = {}
    annotations: AnnotationMap = {}
    priority_class_name: ObjectName = "system-node-critical"
    tolerations: tuple[Toleration, ...] = (Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule"),)
    update_strategy: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    rolling_update: RollingUpdateSpec = RollingUpdateSpec()
    pod_security_context: PodSecurityContext | None = None


class ToolkitSpec(OperandSpec):
    """The `nvidia-container-toolkit-daemonset` operand (configures the container runtime for GPUs)."""

    repository: str = "nvcr.io/nvidia/k8s"
    image: str = "container-toolkit"
    version: str = "v1.20.0"
    install_dir: str = "/usr/local/nvidia"

    @field_validator("install_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute host path")
        return value


class CdiSpec(ConfigModel):
    """Container Device Interface: how GPUs are injected into containers."""

    enabled: bool = True
    default: bool = False
    nri_plugin_enabled: bool = False


class HostPathsSpec(ConfigModel):
    """Where the host keeps its root filesystem, the containerized driver and the kubelet state."""

    root_fs: str = Field(default="/", alias="rootFS")
    driver_install_dir: str = "/run/nvidia/driver"
    kubelet_root_dir: str = "/var/lib/kubelet"

    @model_validator(mode="after")
    def _absolute(self) -> Self:
        for name, value in (("rootFS", self.root_fs), ("driverInstallDir", self.driver_install_dir),
                            ("kubeletRootDir", self.kubelet_root_dir)):
            if not value.startswith("/"):
                raise ValueError(f"{name} {value!r} must be an absolute host path")
        return self


class PsaSpec(ConfigModel):
    """Pod Security Admission: label the namespace `privileged` so the operands are admitted."""

    enabled: bool = False


class PspSpec(ConfigModel):
    """PodSecurityPolicy was removed from Kubernetes; the field is accepted and has no effect, as upstream."""

    enabled: bool = False
