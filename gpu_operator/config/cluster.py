"""What NVIDIA's operator discovers on the live cluster, declared up front.

The upstream operator inspects nodes at reconcile time: the container runtime (from `containerRuntimeVersion`),
the OS of the GPU nodes (from NFD's `system-os_release` labels, which pick the driver image tag), the kernels
(for precompiled drivers) and whether the Prometheus Operator's CRDs exist. A Pulumi program renders before any
node exists, so these facts are part of the config; pools created by this package fill them in.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from gpu_operator.config.base import ConfigModel

__all__ = ["NodeOperatingSystem", "ClusterFacts", "ContainerRuntime", "PUBLISHED_DRIVER_OS", "BUILDABLE_DRIVER_OS"]

ContainerRuntime = Literal["containerd", "crio", "docker"]

# NVIDIA drops the minor version from the OS tag for these distributions (rhel9, not rhel9.4).
_MAJOR_ONLY = ("rhel", "rocky", "ol")
_OS_ID = re.compile(r"^[a-z][a-z0-9._-]*\Z")
#: os-release IDs NVIDIA publishes driver images for on nvcr.io (`<version>-ubuntu24.04`, `-rhel9`, `-rocky9`).
PUBLISHED_DRIVER_OS = ("ubuntu", "rhel", "rocky")
#: os-release IDs whose driver image NVIDIA's gpu-driver-container repository builds but does not publish: the
#: image is built from that repository and pushed to the registry `driver.repository` names.
BUILDABLE_DRIVER_OS = ("azurelinux", "amzn", "centos", "debian", "fedora", "flatcar", "sles", "sl-micro")
# kernel and OS versions end up as node-label values in DaemonSet node selectors
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z")


class NodeOperatingSystem(ConfigModel):
    """One OS image used by GPU nodes (`/etc/os-release` ID and VERSION_ID), e.g. ubuntu 22.04."""

    id: str = Field(description="os-release ID, e.g. ubuntu, rhel, azurelinux")
    version_id: str = Field(description="os-release VERSION_ID, e.g. 22.04")
    kernel_versions: tuple[str, ...] = Field(
        default=(), description="full kernel versions of these nodes; required for precompiled drivers"
    )

    @field_validator("id")
    @classmethod
    def _os_id(cls, value: str) -> str:
        if not _OS_ID.match(value):
            raise ValueError(f"{value!r} is not an os-release ID (lower-case, e.g. 'ubuntu')")
        if value not in PUBLISHED_DRIVER_OS + BUILDABLE_DRIVER_OS:
            raise ValueError(
                f"{value!r} is not an OS that NVIDIA's driver image exists for: use {', '.join(PUBLISHED_DRIVER_OS)} "
                f"(published on nvcr.io) or {', '.join(BUILDABLE_DRIVER_OS)} (built from NVIDIA's gpu-driver-container "
                "repository); GPU nodes run Linux"
            )
        return value

    @field_validator("version_id")
    @classmethod
    def _version_id(cls, value: str) -> str:
        if not _LABEL_VALUE.match(value):
            raise ValueError(f"{value!r} is not an os-release VERSION_ID such as '22.04'")
        return value

    @field_validator("kernel_versions")
    @classmethod
    def _kernels(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for kernel in values:
            if not _LABEL_VALUE.match(kernel):
                raise ValueError(
                    f"{kernel!r} is not a kernel version usable as a node label value, such as '5.15.0-1074-azure'"
                )
        duplicates = sorted({k for k in values if values.count(k) > 1})
        if duplicates:
            raise ValueError(f"kernel listed twice: {', '.join(duplicates)}")
        return values

    @property
    def tag(self) -> str:
        """The driver image suffix NVIDIA derives from the OS (`ubuntu22.04`, `rhel9`)."""
        version = self.version_id.split(".")[0] if self.id in _MAJOR_ONLY else self.version_id
        return f"{self.id}{version}"


class ClusterFacts(ConfigModel):
    """Facts about the target cluster that NVIDIA's operator would otherwise detect at runtime."""

    container_runtime: ContainerRuntime = "containerd"
    operating_systems: tuple[NodeOperatingSystem, ...] = Field(
        default=(NodeOperatingSystem(id="ubuntu", version_id="22.04"),), min_length=1
    )
    prometheus_operator: bool = Field(
        default=False,
        description="the monitoring.coreos.com CRDs are installed (e.g. kube-prometheus-stack), so ServiceMonitors "
        "can be created; plain AKS has none",
    )
    unlisted_kernels: Literal["compile", "none"] = Field(
        default="compile",
        description="with driver.usePrecompiled, what a GPU node whose kernel is not in kernelVersions gets (say "
        "after a node-image upgrade): compile (the regular driver DaemonSet builds the modules on it) or none "
        "(no driver until you list its kernel)",
    )

    @field_validator("operating_systems")
    @classmethod
    def _distinct(cls, values: tuple[NodeOperatingSystem, ...]) -> tuple[NodeOperatingSystem, ...]:
        tags = [os.tag for os in values]
        duplicates = sorted({t for t in tags if tags.count(t) > 1})
        if duplicates:
            raise ValueError(f"operating system listed twice: {', '.join(duplicates)}; merge their kernelVersions")
        return values
