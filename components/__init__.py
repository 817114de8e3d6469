"""Pulumi ComponentResources for GPU clusters; import them as `gpu_operator.components`.

Components are thin: the Kubernetes knowledge lives in :mod:`gpu_operator.render`; a component validates its
config, renders, and registers the objects with the right parent, provider and ordering.
"""

from gpu_operator.components.node_feature_discovery import NodeFeatureDiscovery, NodeFeatureDiscoveryArgs
from gpu_operator.components.operand import GpuOperand, GpuOperandArgs
from gpu_operator.components.operator import GpuOperator, GpuOperatorArgs

__all__ = [
    "GpuOperand",
    "GpuOperandArgs",
    "GpuOperator",
    "GpuOperatorArgs",
    "NodeFeatureDiscovery",
    "NodeFeatureDiscoveryArgs",
]
