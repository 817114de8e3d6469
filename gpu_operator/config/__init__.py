"""Typed, validated config for a GPU operator deployment.

Use :func:`load_config` or :func:`parse_config` to get a :class:`GpuStackConfig`; a bad document raises
:class:`ConfigError` listing every problem with its path. Importers for Helm values and ClusterPolicy manifests
live in :mod:`gpu_operator.config.importers`.
"""

from gpu_operator.config.agents import AGENT_OPERANDS, AgentsConfig, AgentsImage
from gpu_operator.config.cluster import ClusterFacts, NodeOperatingSystem
from gpu_operator.config.clusterpolicy import ClusterPolicySpec
from gpu_operator.config.device_plugin import DevicePluginConfig
from gpu_operator.config.document import GpuStackConfig, NfdSpec, OperandConfigs
from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.loader import BUILTIN_DEFAULT, load_config, parse_config
from gpu_operator.config.mig_parted import MigPartedConfig

__all__ = [
    "AGENT_OPERANDS",
    "AgentsConfig",
    "AgentsImage",
    "BUILTIN_DEFAULT",
    "ClusterFacts",
    "ClusterPolicySpec",
    "ConfigError",
    "DevicePluginConfig",
    "GpuStackConfig",
    "MigPartedConfig",
    "NfdSpec",
    "NodeOperatingSystem",
    "OperandConfigs",
    "Problem",
    "load_config",
    "parse_config",
]
