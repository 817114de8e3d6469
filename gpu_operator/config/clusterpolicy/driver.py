"""The `driver` section: the containerized NVIDIA driver, its driver-manager init container and upgrades.

Defaults are the GPU Operator v26.7.0 chart's. `upgradePolicy` keeps the ClusterPolicy names (`podDeletion`),
not the Helm value names (`gpuPodDeletion`); the Helm importer translates.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from gpu_operator.config.base import ConfigModel, Int32
from gpu_operator.config.clusterpolicy.common import ImageFields, OperandSpec
from gpu_operator.config.clusterpolicy.runtime import check_max_unavailable
from gpu_operator.config.driver_rollout import DriverRollout
from gpu_operator.config.kube import EnvList, ObjectName, PodSelector

__all__ = [
    "ContainerProbe",
    "DriverManagerSpec",
    "DrainSpec",
    "PodDeletionSpec",
    "WaitForCompletionSpec",
    "DriverUpgradePolicy",
    "RdmaSpec",
    "RepoConfig",
    "CertConfig",
    "LicensingConfig",
    "VirtualTopology",
    "KernelModuleConfig",
    "DriverSpec",
    "KernelModuleType",
]

KernelModuleType = Literal["auto", "open", "proprietary"]

#: k8s-operator-libs pkg/upgrade common_manager.go `GetUpgradesAvailable`: with maxUnavailable 0, every node
#: already counts as too many unavailable, so no node is ever admitted to an upgrade.
_NO_UPGRADE_EVER = ("lets no node be unavailable, so no driver upgrade would ever start: give at least 1 (or '1%'), "
                    "or set autoUpgrade: false to stop driver upgrades on purpose")


class ContainerProbe(ConfigModel):
    """Probe timings (the probe command itself is fixed by the operand)."""

    initial_delay_seconds: Int32 | None = Field(default=None, ge=0)
    timeout_seconds: Int32 | None = Field(default=None, ge=1)
    period_seconds: Int32 | None = Field(default=None, ge=1)
    success_threshold: Int32 | None = Field(default=None, ge=1)
    failure_threshold: Int32 | None = Field(default=None, ge=1)


class DriverManagerSpec(ImageFields):
    """The k8s-driver-manager init container that unloads an old driver before a new one installs."""

    repository: str = "nvcr.io/nvidia/cloud-native"
    image: str = "k8s-driver-manager"
    version: str = "v0.12.0"
    env: EnvList = ()


class DrainSpec(ConfigModel):
    enable: bool = False
    force: bool = False
    pod_selector: PodSelector = ""
    timeout_seconds: int = Field(default=300, ge=0)
    delete_empty_dir: bool = False


class PodDeletionSpec(ConfigModel):
    force: bool = False
    timeout_seconds: int = Field(default=300, ge=0)
    delete_empty_dir: bool = False


class WaitForCompletionSpec(ConfigModel):
    pod_selector: PodSelector = ""
    timeout_seconds: int = Field(default=0, ge=0)


class DriverUpgradePolicy(ConfigModel):
    """Rolling driver upgrades, node by node (see the upgrade state machine)."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = Field(default=1, ge=0)
    max_unavailable: int | str = "25%"
    wait_for_completion: WaitForCompletionSpec = WaitForCompletionSpec()
    pod_deletion: PodDeletionSpec = PodDeletionSpec()
    drain: DrainSpec = DrainSpec()

    @field_validator("max_unavailable", mode="before")
    @classmethod
    def _max_unavailable(cls, value: int | str) -> int | str:
        return check_max_unavailable(value, _NO_UPGRADE_EVER)


class RdmaSpec(ConfigModel):
    """GPUDirect RDMA: the nvidia-peermem sidecar, with MOFED from the host or the Network Operator."""

    enabled: bool = False
    use_host_mofed: bool = False


class RepoConfig(ConfigModel):
    config_map_name: ObjectName = ""


class CertConfig(ConfigModel):
    name: ObjectName = ""


class LicensingConfig(ConfigModel):
    config_map_name: ObjectName = ""
    secret_name: ObjectName = ""
    nls_enabled: bool = True


class VirtualTopology(ConfigModel):
    config: ObjectName = ""


class KernelModuleConfig(ConfigModel):
    name: ObjectName = ""


class DriverSpec(OperandSpec):
    """The `nvidia-driver-daemonset` operand."""

    repository: str = "nvcr.io/nvidia"
    image: str = "driver"
    version: str = "595.91.07"
    use_nvidia_driver_crd: bool = Field(default=False, alias="useNvidiaDriverCRD")
    use_precompiled: bool = False
    kernel_module_type: KernelModuleType = "auto"
    use_open_kernel_modules: bool | None = None
    startup_probe: ContainerProbe = ContainerProbe(
        initial_delay_seconds=60, period_seconds=10, timeout_seconds=60, failure_threshold=120
    )
    liveness_probe: ContainerProbe | None = None
    readiness_probe: ContainerProbe | None = None
    rdma: RdmaSpec = RdmaSpec()
    manager: DriverManagerSpec = DriverManagerSpec()
    upgrade_policy: DriverUpgradePolicy = DriverUpgradePolicy()
    repo_config: RepoConfig = RepoConfig()
    cert_config: CertConfig = CertConfig()
    licensing_config: LicensingConfig = LicensingConfig()
    virtual_topology: VirtualTopology = VirtualTopology()
    kernel_module_config: KernelModuleConfig = KernelModuleConfig()
    secret_env: ObjectName = Field(default="", description="a Secret whose keys become the driver's environment")
    rollout: DriverRollout | None = Field(default=None, description="ours, not the ClusterPolicy's: the stages a "
                                          "driver change goes through (gpu_operator.config.driver_rollout)")
