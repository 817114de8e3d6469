"""Pulumi ComponentResources for GPU clusters; import them as `gpu_operator.components`.

Components are thin: the Kubernetes and AKS knowledge lives in :mod:`gpu_operator.render`; a component validates
its config, renders, and registers the result with the right parent, provider and ordering.

* `GpuCluster`: the whole fleet for one environment (cluster, GPU pools, operator);
* `AksCluster`, `GpuNodePool`: the cluster (existing or created) and one GPU agent pool;
* `GpuOperator` (with `GpuOperand`, `NodeFeatureDiscovery`): the operator's operands on any cluster;
* `NetworkOperator`: NVIDIA's Network Operator and the RDMA wiring of InfiniBand pools;
* `DraDriver`: NVIDIA's DRA driver for pools that allocate GPUs through DRA, and the config's claim templates;
* `GpuMonitoring`: the GPU alerts and recording rules (PrometheusRule) and the Grafana dashboard;
* `AgentsImage`: the agents image built from this package's Dockerfile and pushed to an Azure Container Registry.

`multi_language` (not imported here) offers `GpuOperator` to Pulumi YAML, TypeScript, Go and C# programs as the
`gpu-operator` component provider (`pulumi package add`).
"""

from gpu_operator.components.agents_image import AgentsImage, AgentsImageArgs
from gpu_operator.components.aks_cluster import AksCluster, AksClusterArgs
from gpu_operator.components.cluster import GpuCluster, GpuClusterArgs
from gpu_operator.components.dra_driver import DraDriver, DraDriverArgs
from gpu_operator.components.monitoring import GpuMonitoring, GpuMonitoringArgs
from gpu_operator.components.network_operator import NetworkOperator, NetworkOperatorArgs
from gpu_operator.components.node_feature_discovery import NodeFeatureDiscovery, NodeFeatureDiscoveryArgs
from gpu_operator.components.node_pool import GpuNodePool, GpuNodePoolArgs
from gpu_operator.components.operand import GpuOperand, GpuOperandArgs
from gpu_operator.components.operator import GpuOperator, GpuOperatorArgs

__all__ = [
    "AgentsImage",
    "AgentsImageArgs",
    "AksCluster",
    "AksClusterArgs",
    "DraDriver",
    "DraDriverArgs",
    "GpuCluster",
    "GpuClusterArgs",
    "GpuMonitoring",
    "GpuMonitoringArgs",
    "GpuNodePool",
    "GpuNodePoolArgs",
    "GpuOperand",
    "GpuOperandArgs",
    "GpuOperator",
    "GpuOperatorArgs",
    "NetworkOperator",
    "NetworkOperatorArgs",
    "NodeFeatureDiscovery",
    "NodeFeatureDiscoveryArgs",
]
