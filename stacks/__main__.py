"""The Pulumi program: one GPU fleet per stack, from the stack's `gpu-operator:config` document.

Stack config (stacks/Pulumi.<env>.yaml):

    config:
      gpu-operator:config: {...}               # the config document (docs/reference/config.md)
      gpu-operator:subscriptionId: <id>        # optional: the Azure subscription (default: the environment's)
      gpu-operator:kubeconfig: {secure: ...}   # only without an `aks` section: the target cluster's kubeconfig
      gpu-operator:adoptExistingObjects: true  # optional, once: take over objects of an existing `helm install`
      gpu-operator:waitForDaemonsets: true     # optional: `pulumi up` waits for operand rollouts (never OnDelete)

With an `aks` section the program builds a `GpuCluster` (the AKS cluster, its GPU pools, then the operator) with
an explicit Azure provider whose credentials come from the environment (`az login`, `ARM_*` variables or OIDC).
Without one, it installs the same software on the cluster the `kubeconfig` secret points at
(:func:`~gpu_operator.components.cluster_software.install_cluster_software`): the Network Operator with
`network.enabled`, the operator's operands, the DRA driver with `dra.enabled`, and the GPU alerts and dashboard
when the `monitoring` section asks for any.

Both ways export the same ten outputs, so a consumer stack does not break when this stack gains or loses `aks`:
`kubeconfig` (the cluster's user credential, secret; the empty string without `aks`: this stack then never held
one it may hand on), `resourceGroupName` and `clusterName` (empty without `aks`), `namespace`, `runtimeClassName`
(empty with the NRI plugin), `gpuResourceNames`, `gpuNodeLabels` (the labels GPU nodes carry for the operands), and
per pool `poolNames`, `nodeSelectorLabels` and `tolerations` (empty without pools). No output is ever null: the
engine drops null outputs from the stack, and a consumer's `require_output` would then fail.

The notes `gpu-operator render` prints about the document (settings that have no effect, what an InfiniBand pool
adds, the alerts left out) are the program's warnings at `pulumi preview` and `pulumi up`.
"""

from __future__ import annotations

import pulumi
from gpu_operator.components.cluster_software import SoftwareNames, install_cluster_software
from gpu_operator.components.kubernetes_provider import kubernetes_provider

from gpu_operator.config import ConfigError, Problem, parse_config
from gpu_operator.render.notes import render_notes

settings = pulumi.Config("gpu-operator")
document = parse_config(settings.get_object("config") or {}, source="gpu-operator:config")
for note in render_notes(document):  # what `gpu-operator render` prints: settings without effect, alerts left out
    pulumi.log.warn(note)

adopt = settings.get_bool("adoptExistingObjects") or False
wait_for_daemonsets = settings.get_bool("waitForDaemonsets") or False

if document.aks is None:
    if document.agents.build is not None:
        raise ConfigError([Problem("agents.build", (
            "building the agents image grants the AKS kubelet identity AcrPull, which needs the aks section; "
            "without AKS, build it with `make image`, push it, and set agents.image (with pullSecrets)"
        ))], "gpu-operator:config")
    kubeconfig = settings.require_secret("kubeconfig")
    provider = kubernetes_provider("cluster", kubeconfig, adopt=adopt)
    # the same pieces GpuCluster installs on its AKS cluster, under the names this program always gave them
    software = install_cluster_software(document, provider, kubeconfig,
                                        SoftwareNames(network="gpu-network", operator="gpu", dra="gpu-dra",
                                                      monitoring="gpu-monitoring"),
                                        wait_for_daemonsets=wait_for_daemonsets)
    operator = software.operator
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
    # only here: a stack on a plain Kubernetes cluster never loads the Azure SDK (a preview starts the program)
    import pulumi_azure_native as azure_native

    from gpu_operator.components.cluster import GpuCluster

    azure = azure_native.Provider("azure", subscription_id=settings.get("subscriptionId"))
    cluster = GpuCluster("gpu", {"config": document, "azure_provider": azure, "adopt_existing_objects": adopt,
                                 "wait_for_daemonsets": wait_for_daemonsets})
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
