"""The Pulumi program: one GPU fleet per stack, from the stack's `gpu-operator:config` document.

Stack config (stacks/Pulumi.<env>.yaml):

    config:
      gpu-operator:config: {...}               # the config document (see README)
      gpu-operator:subscriptionId: <id>        # optional: the Azure subscription (default: the environment's)
      gpu-operator:kubeconfig: {secure: ...}   # only without an `aks` section: the target cluster's kubeconfig
      gpu-operator:adoptExistingObjects: true  # optional, once: take over objects of an existing `helm install`

With an `aks` section the program builds a `GpuCluster` (the AKS cluster, its GPU pools, then the operator) with
an explicit Azure provider whose credentials come from the environment (`az login`, `ARM_*` variables or OIDC).
Without one, it installs the operator's operands on the cluster the `kubeconfig` secret points at. Either way
`GpuMonitoring` adds the GPU alerts and dashboard when the `monitoring` section asks for any.

Both ways export the same ten outputs, so a consumer stack does not break when this stack gains or loses `aks`:
`kubeconfig` (the cluster's user credential, secret; the empty string without `aks`: this stack then never held
one it may hand on), `resourceGroupName` and `clusterName` (empty without `aks`), `namespace`, `runtimeClassName`
(empty with the NRI plugin), `gpuResourceNames`, `gpuNodeLabels` (the labels GPU nodes carry for the operands), and
per pool `poolNames`, `nodeSelectorLabels` and `tolerations` (empty without pools). No output is ever null: the
engine drops null outputs from the stack, and a consumer's `require_output` would then fail.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native
import pulumi_kubernetes as k8s
from gpu_operator.components import GpuCluster, GpuMonitoring, GpuOperator

from gpu_operator.config import ConfigError, Problem, parse_config
from gpu_operator.render.monitoring import monitoring_objects

settings = pulumi.Config("gpu-operator")
document = parse_config(settings.get_object("config") or {}, source="gpu-operator:config")

adopt = settings.get_bool("adoptExistingObjects") or False

if document.aks is None:
    if document.agents.build is not None:
        raise ConfigError([Problem("agents.build", (
            "building the agents image grants the AKS kubelet identity AcrPull, which needs the aks section; "
            "without AKS, build it with `make image`, push it, and set agents.image (with pullSecrets)"
        ))], "gpu-operator:config")
    provider = k8s.Provider(
        "cluster", kubeconfig=settings.require_secret("kubeconfig"), upsert_existing_objects=adopt or None
    )
    operator = GpuOperator("gpu", {"provider": provider, "config": document})
    if monitoring_objects(document):
        GpuMonitoring("gpu-monitoring", {"provider": provider, "config": document},
                      pulumi.ResourceOptions(depends_on=[operator]))
    outputs: dict[str, object] = {
        "kubeconfig": pulumi.Output.secret(""),
        "resourceGroupName": "",
        "clusterName": "",
        "gpuResourceNames": operator.gpu_resource_names,
        "poolNames": [],
        "nodeSelectorLabels": {},
        "tolerations": {},
    }
else:
    azure = azure_native.Provider("azure", subscription_id=settings.get("subscriptionId"))
    cluster = GpuCluster("gpu", {"config": document, "azure_provider": azure, "adopt_existing_objects": adopt})
    operator = cluster.operator
    outputs = {
        "kubeconfig": cluster.kubeconfig,
        "resourceGroupName": cluster.resource_group_name,
        "clusterName": cluster.cluster_name,
        "gpuResourceNames": cluster.gpu_resource_names,
        "poolNames": cluster.pool_names,
        "nodeSelectorLabels": cluster.node_selector_labels,
        "tolerations": cluster.tolerations,
    }
outputs.update(
    namespace=operator.namespace,
    runtimeClassName=operator.runtime_class_name.apply(lambda name: name or ""),
    gpuNodeLabels=operator.node_selector_labels,
)
for key, value in outputs.items():
    pulumi.export(key, value)
