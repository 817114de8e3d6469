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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Public name → the module that defines it. Imported on first use: a program on a plain Kubernetes cluster never
#: loads the Azure and Docker SDKs (a `pulumi preview` starts the program every time, and they cost a second).
_MODULES = {
    "AgentsImage": "agents_image", "AgentsImageArgs": "agents_image",
    "AksCluster": "aks_cluster", "AksClusterArgs": "aks_cluster",
    "DraDriver": "dra_driver", "DraDriverArgs": "dra_driver",
    "GpuCluster": "cluster", "GpuClusterArgs": "cluster",
    "GpuMonitoring": "monitoring", "GpuMonitoringArgs": "monitoring",
    "GpuNodePool": "node_pool", "GpuNodePoolArgs": "node_pool",
    "GpuOperand": "operand", "GpuOperandArgs": "operand",
    "GpuOperator": "operator", "GpuOperatorArgs": "operator",
    "NetworkOperator": "network_operator", "NetworkOperatorArgs": "network_operator",
    "NodeFeatureDiscovery": "node_feature_discovery", "NodeFeatureDiscoveryArgs": "node_feature_discovery",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
