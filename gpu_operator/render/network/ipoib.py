"""The IPoIB secondary network: an `IPoIBNetwork` and, with NVIDIA's IPAM, its `IPPool`.

The Network Operator turns an IPoIBNetwork (cluster-scoped) into a NetworkAttachmentDefinition of the same name
in `networkNamespace`, with CNI type `ipoib` on the `master` IB netdev; pods join it with the annotation
`k8s.v1.cni.cncf.io/networks: <name>` and get a `net1` interface. Addresses come from nv-ipam (an IPPool in the
operator's namespace, one block of `perNodeBlockSize` per IB node) or from the IPAM JSON given in `ipoib.ipam`.
"""

from __future__ import annotations

import json

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.k8s import Object, metadata
from gpu_operator.render.network.nic_cluster_policy import ib_node_affinity

__all__ = ["ip_pool", "ipoib_network", "ipoib_objects"]


def ip_pool(config: GpuStackConfig) -> Object | None:
    ipoib = config.network.ipoib
    if ipoib is None or ipoib.ip_pool is None:
        return None
    pool = ipoib.ip_pool
    spec: Object = {
        "subnet": pool.subnet,
        "perNodeBlockSize": pool.per_node_block_size,
        "nodeSelector": ib_node_affinity()["requiredDuringSchedulingIgnoredDuringExecution"],
    }
    if pool.gateway is not None:
        spec["gateway"] = pool.gateway
    return {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": metadata(pool.name, config.network.namespace),
        "spec": spec,
    }


def ipoib_network(config: GpuStackConfig) -> Object | None:
    ipoib = config.network.ipoib
    if ipoib is None:
        return None
    if ipoib.ip_pool is not None:
        ipam = json.dumps({"type": "nv-ipam", "poolName": ipoib.ip_pool.name})
    else:
        ipam = ipoib.ipam or ""
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "IPoIBNetwork",
        "metadata": metadata(ipoib.name),
        "spec": {"networkNamespace": ipoib.network_namespace, "master": ipoib.master, "ipam": ipam},
    }


def ipoib_objects(config: GpuStackConfig) -> list[Object]:
    """The IPPool (if any) then the IPoIBNetwork, or nothing without `network.ipoib`."""
    return [obj for obj in (ip_pool(config), ipoib_network(config)) if obj is not None]
