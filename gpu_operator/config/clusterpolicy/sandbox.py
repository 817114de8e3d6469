"""Sandbox (VM) workloads: GPU passthrough and vGPU for KubeVirt or Kata, and their operands.

All of these only deploy when `sandboxWorkloads.enabled` is true; nodes then choose their role through the
`nvidia.com/gpu.workload.config` label (container, vm-passthrough or vm-vgpu).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import OperandSpec
from gpu_operator.config.clusterpolicy.driver import DriverManagerSpec, KernelModuleConfig
from gpu_operator.config.kube import LabelMap, ObjectName

__all__ = [
    "SandboxWorkloadsSpec",
    "VfioManagerSpec",
    "VgpuManagerSpec",
    "VgpuDeviceManagerConfigRef",
    "VgpuDeviceManagerSpec",
    "SandboxDevicePluginSpec",
    "KataSandboxDevicePluginSpec",
    "KataArtifacts",
    "KataRuntimeClass",
    "KataManagerConfig",
    "KataManagerSpec",
    "CcManagerSpec",
    "WorkloadType",
]

WorkloadType = Literal["container", "vm-passthrough", "vm-vgpu"]


class SandboxWorkloadsSpec(ConfigModel):
    enabled: bool = False
    default_workload: WorkloadType = "container"
    mode: Literal["kubevirt", "kata"] = "kubevirt"


class VfioManagerSpec(OperandSpec):
    """`nvidia-vfio-manager`: binds GPUs to vfio-pci for passthrough."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "k8s-driver-manager"
    version: str = "v0.12.0"
    driver_manager: DriverManagerSpec = DriverManagerSpec()


class VgpuManagerSpec(OperandSpec):
    """`nvidia-vgpu-manager-daemonset`: the vGPU host driver (a user-built image)."""

    enabled: bool = False
    repository: str = ""
    image: str = "vgpu-manager"
    version: str = ""
    driver_manager: DriverManagerSpec = DriverManagerSpec()
    kernel_module_config: KernelModuleConfig = KernelModuleConfig()


class VgpuDeviceManagerConfigRef(ConfigModel):
    name: ObjectName = ""
    default: str = "default"


class VgpuDeviceManagerSpec(OperandSpec):
    """`nvidia-vgpu-device-manager`: creates vGPU devices from a named config."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "vgpu-device-manager"
    version: str = "v0.5.0"
    config: VgpuDeviceManagerConfigRef = VgpuDeviceManagerConfigRef()


class SandboxDevicePluginSpec(OperandSpec):
    """`nvidia-sandbox-device-plugin-daemonset`: advertises passthrough GPUs and vGPUs to KubeVirt."""

    repository: str = "nvcr.io/nvidia"
    image: str = "kubevirt-gpu-device-plugin"
    version: str = "v1.6.0"


class KataSandboxDevicePluginSpec(OperandSpec):
    """`nvidia-kata-sandbox-device-plugin-daemonset`: advertises passthrough GPUs to Kata containers."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "nvidia-sandbox-device-plugin"
    version: str = "v0.0.5"


class KataArtifacts(ConfigModel):
    url: str
    pull_secret: ObjectName | None = None


class KataRuntimeClass(ConfigModel):
    name: str
    node_selector: LabelMap | None = None
    artifacts: KataArtifacts


class KataManagerConfig(ConfigModel):
    artifacts_dir: str = "/opt/nvidia-gpu-operator/artifacts/runtimeclasses"
    runtime_classes: tuple[KataRuntimeClass, ...] = ()


class KataManagerSpec(OperandSpec):
    """Deprecated: the Kata manager is never deployed since v26 (kept so older specs still parse)."""

    enabled: bool = False
    config: KataManagerConfig | None = None


class CcManagerSpec(OperandSpec):
    """`nvidia-cc-manager`: switches GPUs in and out of confidential-computing mode."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "k8s-cc-manager"
    version: str = "v0.4.3"
    default_mode: Literal["on", "off", "devtools"] = Field(default="on")
