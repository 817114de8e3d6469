"""`gpu-operator-agent device-plugin`: the kubelet Device Plugin API v1beta1 for the node's GPUs.

What NVIDIA's k8s-device-plugin does, on the shared NVML layer: one gRPC server per resource
(:mod:`.server`) on its own socket in the kubelet's device-plugins directory, registered with `kubelet.sock`
and registered again when the kubelet restarts (:mod:`.manager`); resources from the GPUs, the MIG strategy
and time-slicing / MPS replicas (:mod:`.devices`); `Allocate` answers for every device list strategy
(:mod:`.allocate`); `GetPreferredAllocation` (:mod:`.preferred`); health from XID events (:mod:`.health`);
MPS-shared resources served only once their MPS control daemons answer (:mod:`.mps`);
the settings as NVIDIA's flags, variables and v1 config file (:mod:`.settings`). The wire types are
generated from this package's own `deviceplugin.proto`.
"""

from gpu_operator.agents.device_plugin.allocate import AllocationError, ContainerAllocation, allocate
from gpu_operator.agents.device_plugin.devices import DeviceError, PluginDevice, Resource, build_resources
from gpu_operator.agents.device_plugin.health import DEFAULT_IGNORED_XIDS, HealthMonitor, HealthPolicy, health_policy
from gpu_operator.agents.device_plugin.manager import PluginManager
from gpu_operator.agents.device_plugin.mps import MpsDaemonError
from gpu_operator.agents.device_plugin.preferred import PreferenceError, preferred_allocation
from gpu_operator.agents.device_plugin.server import ResourceServer
from gpu_operator.agents.device_plugin.settings import Settings, SettingsError, resolve_settings

__all__ = [
    "AllocationError",
    "ContainerAllocation",
    "allocate",
    "DeviceError",
    "PluginDevice",
    "Resource",
    "build_resources",
    "DEFAULT_IGNORED_XIDS",
    "HealthMonitor",
    "HealthPolicy",
    "health_policy",
    "PluginManager",
    "MpsDaemonError",
    "PreferenceError",
    "preferred_allocation",
    "ResourceServer",
    "Settings",
    "SettingsError",
    "resolve_settings",
]
