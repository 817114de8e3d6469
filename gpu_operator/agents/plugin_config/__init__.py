"""The device plugin's v1 config file, shared by the device plugin and feature discovery agents.

:func:`load_plugin_config` reads a file the way the plugin does; :class:`PluginConfig` holds its flags and its
GPU sharing setup (time-slicing and MPS replicas), with the plugin's rules for which strategy is active and
which replication applies to a resource.
"""

from gpu_operator.agents.plugin_config.model import (
    RESOURCE_PREFIX,
    Imex,
    PluginConfig,
    ReplicatedDevices,
    ReplicatedResource,
    ReplicatedResources,
    Sharing,
    SharingStrategy,
)
from gpu_operator.agents.plugin_config.parse import (
    PluginConfigError,
    load_plugin_config,
    parse_plugin_config,
    resource_name,
)

__all__ = [
    "RESOURCE_PREFIX",
    "Imex",
    "PluginConfig",
    "PluginConfigError",
    "ReplicatedDevices",
    "ReplicatedResource",
    "ReplicatedResources",
    "Sharing",
    "SharingStrategy",
    "load_plugin_config",
    "parse_plugin_config",
    "resource_name",
]
