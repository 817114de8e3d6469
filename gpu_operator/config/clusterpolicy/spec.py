"""`ClusterPolicySpec`: the `spec` of an NVIDIA `ClusterPolicy` (nvidia.com/v1), accepted verbatim.

Every field of the upstream CRD is accepted under the same camelCase name (a test walks both trees), and every
default is the GPU Operator v26.7.0 Helm chart's, so an empty section means "what `helm install` gives you".
"""

from __future__ import annotations

from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.driver import DriverSpec
from gpu_operator.config.clusterpolicy.monitoring import DcgmExporterSpec, DcgmSpec, NodeStatusExporterSpec
from gpu_operator.config.clusterpolicy.plugins import DevicePluginSpec, GfdSpec, MigManagerSpec, MigSpec
from gpu_operator.config.clusterpolicy.runtime import (
    CdiSpec,
    DaemonsetsSpec,
    HostPathsSpec,
    OperatorSpec,
    PsaSpec,
    PspSpec,
    ToolkitSpec,
)
from gpu_operator.config.clusterpolicy.sandbox import (
    CcManagerSpec,
    KataManagerSpec,
    KataSandboxDevicePluginSpec,
    SandboxDevicePluginSpec,
    SandboxWorkloadsSpec,
    VfioManagerSpec,
    VgpuDeviceManagerSpec,
    VgpuManagerSpec,
)
from gpu_operator.config.clusterpolicy.storage import GdrcopySpec, GdsSpec
from gpu_operator.config.clusterpolicy.validator import ValidatorSpec

__all__ = ["ClusterPolicySpec"]


class ClusterPolicySpec(ConfigModel):
    """The desired state of the GPU stack, in NVIDIA's ClusterPolicy vocabulary."""

    operator: OperatorSpec = OperatorSpec()
    daemonsets: DaemonsetsSpec = DaemonsetsSpec()
    driver: DriverSpec = DriverSpec()
    toolkit: ToolkitSpec = ToolkitSpec()
    device_plugin: DevicePluginSpec = DevicePluginSpec()
    dcgm_exporter: DcgmExporterSpec = DcgmExporterSpec()
    dcgm: DcgmSpec = DcgmSpec()
    node_status_exporter: NodeStatusExporterSpec = NodeStatusExporterSpec()
    gfd: GfdSpec = GfdSpec()
    mig: MigSpec = MigSpec()
    mig_manager: MigManagerSpec = MigManagerSpec()
    psp: PspSpec = PspSpec()
    psa: PsaSpec = PsaSpec()
    validator: ValidatorSpec = ValidatorSpec()
    gds: GdsSpec = GdsSpec()
    gdrcopy: GdrcopySpec = GdrcopySpec()
    sandbox_workloads: SandboxWorkloadsSpec = SandboxWorkloadsSpec()
    vfio_manager: VfioManagerSpec = VfioManagerSpec()
    sandbox_device_plugin: SandboxDevicePluginSpec = SandboxDevicePluginSpec()
    kata_sandbox_device_plugin: KataSandboxDevicePluginSpec = KataSandboxDevicePluginSpec()
    vgpu_manager: VgpuManagerSpec = VgpuManagerSpec()
    vgpu_device_manager: VgpuDeviceManagerSpec = VgpuDeviceManagerSpec()
    cdi: CdiSpec = CdiSpec()
    kata_manager: KataManagerSpec = KataManagerSpec()
    cc_manager: CcManagerSpec = CcManagerSpec()
    host_paths: HostPathsSpec = HostPathsSpec()
