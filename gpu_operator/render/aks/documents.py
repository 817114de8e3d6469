"""The AKS resources of a config as ARM JSON documents, keyed by the file name `gpu-operator render` gives them.

`agentpool-<pool>.json` per GPU pool, and `managedcluster-<cluster>.json` when the stack creates the cluster:
the same `properties` the components hand to the Azure provider, reviewable (and diffable) without Azure.
"""

from __future__ import annotations

from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.aks.agent_pool import agent_pool_resources
from gpu_operator.render.aks.managed_cluster import managed_cluster_resource

__all__ = ["azure_documents", "AZURE_FILE_PREFIXES"]

#: File name prefixes of the documents (a directory's stale documents are recognised by them).
AZURE_FILE_PREFIXES = ("agentpool-", "managedcluster-")


def azure_documents(config: GpuStackConfig) -> dict[str, dict[str, Any]]:
    """File name → ARM resource, cluster first, then the pools in config order; empty without `aks`."""
    if config.aks is None:
        return {}
    documents: dict[str, dict[str, Any]] = {}
    if config.aks.create:
        documents[f"managedcluster-{config.aks.cluster_name}.json"] = managed_cluster_resource(config.aks)
    for pool, resource in zip(config.pools, agent_pool_resources(config), strict=True):
        documents[f"agentpool-{pool.name}.json"] = resource
    return documents
