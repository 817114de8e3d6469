"""The Pulumi program: one GPU fleet per stack, from the stack's `gpu-operator:config` document.

Stack config (stacks/Pulumi.<env>.yaml):

    config:
      gpu-operator:config: {...}               # the config document (see README)
      gpu-operator:subscriptionId: <id>        # optional: the Azure subscription (default: the environment's)
      gpu-operator:kubeconfig: {secure: ...}   # only without an `aks` section: the target cluster's kubeconfig

With an `aks` section the program builds a `GpuCluster` (the AKS cluster, its GPU pools, then the operator) with
an explicit Azure provider whose credentials come from the environment (`az login`, `ARM_*` variables or OIDC).
Without one, it installs the operator's operands on the cluster the `kubeconfig` secret points at.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
from gpu_operator.components import GpuCluster, GpuOperator

from gpu_operator.config import parse_config

settings = pulumi.Config("gpu-operator")
document = parse_config(settings.get_object("config") or {}, source="gpu-operator:config")

if document.aks is None:
    provider = k8s.Provider("cluster", kubeconfig=settings.require_secret("kubeconfig"))
    operator = GpuOperator("gpu", {"provider": provider, "config": document})
    pulumi.export("namespace", operator.namespace)
    pulumi.export("gpuResourceNames", operator.gpu_resource_names)
    pulumi.export("nodeSelectorLabels", operator.node_selector_labels)
    pulumi.export("runtimeClassName", operator.runtime_class_name)
else:
    azure = azure_native.Provider("azure", subscription_id=settings.get("subscriptionId"))
    cluster = GpuCluster("gpu", {"config": document, "azure_provider": azure})
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export("resourceGroupName", cluster.resource_group_name)
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("poolNames", cluster.pool_names)
    pulumi.export("gpuResourceNames", cluster.gpu_resource_names)
    pulumi.export("nodeSelectorLabels", cluster.node_selector_labels)
    pulumi.export("tolerations", cluster.tolerations)
    pulumi.export("namespace", cluster.operator.namespace)
    pulumi.export("runtimeClassName", cluster.operator.runtime_class_name)
