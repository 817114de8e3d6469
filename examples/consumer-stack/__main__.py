"""A consumer of pulumi-gpu-operator: one MIG-partitioned A100 pool and the GPU operator on an existing cluster.

Instead of the all-in-one `GpuCluster`, the components are used one by one, as a team that already manages its
cluster elsewhere would: `AksCluster` references the cluster and reads its credentials (`credentials: exec`:
kubelogin signs in with this program's Entra ID identity, which works with local accounts disabled),
`GpuNodePool` adds the pool (protected, its count left to the autoscaler), and `GpuOperator` installs the
operands once the pool exists. The ordering rides on the Kubernetes
provider: it depends on the pool, so every object created with it waits for the pool (a component's
`depends_on` would not reach the operator's objects). One validated config document drives all of it, so the
operands tolerate the pool's taint and the pool's node labels match the operands.

Config (Pulumi.<stack>.yaml): `resourceGroup`, `clusterName`, `kubernetesVersion` of the cluster, and whether
the Prometheus Operator's CRDs are installed (`prometheusOperator`).
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
from gpu_operator.components import AksCluster, GpuNodePool, GpuOperator
from gpu_operator.components.aks_cluster import cluster_identifier

from gpu_operator.config import parse_config

settings = pulumi.Config()
document = parse_config(
    {
        "aks": {
            "resourceGroup": settings.require("resourceGroup"),
            "clusterName": settings.require("clusterName"),
            "kubernetesVersion": settings.require("kubernetesVersion"),
            "credentials": "exec",
        },
        "pools": [
            {
                "name": "a100mig",
                "vmSize": "Standard_NC24ads_A100_v4",
                "count": 1,
                "autoscale": {"minCount": 0, "maxCount": 3},
                "migConfig": "all-3g.40gb",
            }
        ],
        "cluster": {"prometheusOperator": settings.get_bool("prometheusOperator") or False},
        "operator": {"mig": {"strategy": "single"}},
    },
    source="gpu-consumer config",
)

azure = azure_native.Provider("azure")
cluster = AksCluster("shared", {"aks": document.aks, "azure_provider": azure, "kubernetes_provider": False})
pool = GpuNodePool(
    "a100mig",
    {
        "config": document,
        "pool": "a100mig",
        "resource_group_name": cluster.resource_group_name,
        "cluster_name": cluster.cluster_name,
        "azure_provider": azure,
    },
)
kubernetes = k8s.Provider(
    "shared",
    kubeconfig=cluster.provider_kubeconfig,
    cluster_identifier=cluster_identifier(document.aks),  # a new credential updates the provider, never replaces it
    opts=pulumi.ResourceOptions(depends_on=[pool]),
)
operator = GpuOperator("gpu", {"provider": kubernetes, "config": document})

pulumi.export("poolName", pool.pool_name)
pulumi.export("nodeSelector", pool.node_selector)
pulumi.export("tolerations", pool.tolerations)
pulumi.export("gpuResourceNames", operator.gpu_resource_names)
