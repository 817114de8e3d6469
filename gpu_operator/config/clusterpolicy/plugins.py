"""Sections for the operands that expose GPUs to pods: device plugin, GPU feature discovery, MIG and MIG manager."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import NamedConfigRef, OperandSpec
from gpu_operator.config.kube import ObjectName

__all__ = [
    "MigStrategy",
    "DevicePluginConfigRef",
    "MpsSpec",
    "DevicePluginSpec",
    "GfdSpec",
    "MigSpec",
    "MigManagerConfigRef",
    "MigManagerSpec",
]

MigStrategy = Literal["none", "single", "mixed"]


class DevicePluginConfigRef(ConfigModel):
    """The ConfigMap of named device-plugin configs and the key used when a node has no config label."""

    name: ObjectName = ""
    default: str = ""


class MpsSpec(ConfigModel):
    root: str = "/run/nvidia/mps"

    @field_validator("root")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute host path")
        return value


class DevicePluginSpec(OperandSpec):
    """The `nvidia-device-plugin-daemonset` operand (and the MPS control daemon that follows it)."""

    repository: str = "nvcr.io/nvidia"
    image: str = "k8s-device-plugin"
    version: str = "v0.20.0"
    config: DevicePluginConfigRef = DevicePluginConfigRef()
    mps: MpsSpec = MpsSpec()


class GfdSpec(OperandSpec):
    """The `gpu-feature-discovery` operand (node labels describing the GPUs)."""

    repository: str = "nvcr.io/nvidia"
    image: str = "k8s-device-plugin"
    version: str = "v0.20.0"


class MigSpec(ConfigModel):
    """How MIG devices are advertised: not at all, as `nvidia.com/gpu`, or per profile."""

    strategy: MigStrategy = "single"


class MigManagerConfigRef(ConfigModel):
    name: ObjectName = ""
    default: Literal["all-disabled", ""] = "all-disabled"


class MigManagerSpec(OperandSpec):
    """The `nvidia-mig-manager` operand (applies the MIG layout named by `nvidia.com/mig.config`)."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "k8s-mig-manager"
    version: str = "v0.15.0"
    config: MigManagerConfigRef = MigManagerConfigRef()
    gpu_clients_config: NamedConfigRef = NamedConfigRef()
