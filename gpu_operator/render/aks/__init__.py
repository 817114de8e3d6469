"""AKS resources rendered from the config, as the AKS REST API spells them (plain dicts, no Pulumi).

* :mod:`~gpu_operator.render.aks.agent_pool`: a GPU pool's agent pool `properties` (and its ARM resource);
* :mod:`~gpu_operator.render.aks.node_labels`: the labels and taints its nodes carry from creation;
* :mod:`~gpu_operator.render.aks.managed_cluster`: the cluster, when the stack creates it;
* :mod:`~gpu_operator.render.aks.documents`: all of them as ARM JSON documents by file name;
* :mod:`~gpu_operator.render.aks.resources`: the extended resources the fleet advertises (MIG profiles of pools);
* :mod:`~gpu_operator.render.aks.kubeconfig`: decoding AKS credentials, choosing kubelogin's login method.
"""

from gpu_operator.render.aks.agent_pool import (
    ARM_API_VERSION,
    agent_pool_properties,
    agent_pool_resource,
    agent_pool_resources,
)
from gpu_operator.render.aks.documents import azure_documents
from gpu_operator.render.aks.managed_cluster import managed_cluster_resource
from gpu_operator.render.aks.node_labels import pool_node_labels, pool_taints, rendered_deploy_operands

__all__ = [
    "ARM_API_VERSION",
    "agent_pool_properties",
    "agent_pool_resource",
    "agent_pool_resources",
    "azure_documents",
    "managed_cluster_resource",
    "pool_node_labels",
    "pool_taints",
    "rendered_deploy_operands",
]
