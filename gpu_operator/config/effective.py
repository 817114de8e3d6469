"""The effective config: what the GPU pools imply for the rest of the document, folded in once.

A pool definition is the single place where a fact about GPU nodes is written; the sections that NVIDIA's
operator would otherwise learn at runtime are derived from it:

* `operator.daemonsets.tolerations`: the operands' default toleration plus one toleration per pool taint, so
  every operand (and the NFD worker, which copies these) runs on every pool;
* `cluster.operatingSystems`: the node image of each pool (the Ubuntu release AKS picks for its OS SKU and
  Kubernetes version), which names the driver image; entries written by hand are kept, so kernel versions for
  precompiled drivers can still be given;
* GPUDirect RDMA for InfiniBand pools whose driver the operator owns: `operator.driver.kernelModuleType` becomes
  `open` when left at its default (for the pools that run the cluster's driver; a pool's own driver gets the same
  rule, see :mod:`gpu_operator.config.driver_groups`). The open kernel modules carry GPUDirect RDMA over DMA-BUF, which works with
  the InfiniBand drivers already on the node and needs no MOFED; the legacy `nvidia-peermem` path
  (`driver.rdma.enabled`) waits for a MOFED driver container, so it stays the user's explicit choice;
* the Network Operator (`network`): on when a pool has InfiniBand (unless `network.enabled: false`), with the
  IB virtual-function ids of the pools' NIC generations; it runs the one NFD, so the GPU operator's is turned
  off, and with `network.mofed: host` the legacy peermem path uses the host's MOFED (`rdma.useHostMofed`);
* DRA (`dra`, on when a pool has `gpuAllocation: dra`): `dra.enabled` resolved, and the driver manager told
  which label marks the DRA nodes (`NODE_LABEL_FOR_GPU_POD_EVICTION`), see :mod:`gpu_operator.config.dra`.

The derivation is idempotent: deriving an effective config again changes nothing, so a config can be validated
and derived at every component boundary. A document without pools is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu_operator.aks.node_images import ubuntu_release
from gpu_operator.config.aks import AksSpec
from gpu_operator.config.cluster import NodeOperatingSystem
from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.dra import dra_effective
from gpu_operator.config.driver_groups import cluster_driver_pools
from gpu_operator.config.kube import Toleration
from gpu_operator.config.network import network_wanted, pool_vf_device_ids
from gpu_operator.config.pools import GpuPool

__all__ = ["effective_config", "pool_operating_system", "pool_tolerations", "needs_open_kernel_modules"]


def pool_operating_system(pool: GpuPool, aks: AksSpec | None) -> NodeOperatingSystem | None:
    """The OS of the pool's node image, or None when its Ubuntu release depends on an unknown version."""
    version = pool.orchestrator_version or (aks.kubernetes_version if aks is not None else None)
    release = ubuntu_release(pool.os_sku, version)
    return NodeOperatingSystem(id="ubuntu", version_id=release) if release is not None else None


def pool_tolerations(pools: Iterable[GpuPool]) -> list[Toleration]:
    """One toleration per distinct pool taint, in pool order."""
    tolerations: list[Toleration] = []
    for pool in pools:
        for taint in pool.node_taints:
            toleration = Toleration.model_validate(taint.toleration)
            if toleration not in tolerations:
                tolerations.append(toleration)
    return tolerations


def needs_open_kernel_modules(doc: GpuStackConfig) -> bool:
    """Whether GPUDirect RDMA for InfiniBand pools should pin the open kernel modules (see module docstring)."""
    driver = doc.operator.driver
    chosen = {"kernel_module_type", "use_open_kernel_modules"} & driver.model_fields_set
    ib_pools = any(pool.has_infiniband and pool.gpu_driver == "operator" for pool in cluster_driver_pools(doc))
    return ib_pools and driver.enabled and not chosen


def _operating_systems(doc: GpuStackConfig) -> tuple[NodeOperatingSystem, ...]:
    listed = list(doc.cluster.operating_systems) if "operating_systems" in doc.cluster.model_fields_set else []
    for pool in doc.pools:
        image = pool_operating_system(pool, doc.aks)
        if image is not None and image.tag not in {os.tag for os in listed}:
            listed.append(image)
    return tuple(listed) or doc.cluster.operating_systems


def _tolerations(doc: GpuStackConfig) -> tuple[Toleration, ...]:
    tolerations = list(doc.operator.daemonsets.tolerations)
    tolerations += [t for t in pool_tolerations(doc.pools) if t not in tolerations]
    return tuple(tolerations)


def _network_effective(doc: GpuStackConfig) -> GpuStackConfig:
    """`network.enabled` and `vfDeviceIds` resolved from the pools; one NFD; host MOFED for legacy peermem."""
    network = doc.network
    if not network_wanted(network, doc.pools):
        return doc
    update: dict[str, object] = {"enabled": True}
    if not network.vf_device_ids:
        update["vf_device_ids"] = pool_vf_device_ids(doc.pools)
    changes: dict[str, object] = {
        "network": network.model_copy(update=update),
        "nfd": doc.nfd.model_copy(update={"enabled": False}),
    }
    rdma = doc.operator.driver.rdma
    if network.mofed == "host" and rdma.enabled and not rdma.use_host_mofed:
        driver = doc.operator.driver.model_copy(update={"rdma": rdma.model_copy(update={"use_host_mofed": True})})
        changes["operator"] = doc.operator.model_copy(update={"driver": driver})
    return doc.model_copy(update=changes)


def effective_config(doc: GpuStackConfig) -> GpuStackConfig:
    """The document with everything its pools imply folded in (unchanged when it has no pools)."""
    doc = dra_effective(_network_effective(doc))
    if not doc.pools:
        return doc
    driver = doc.operator.driver
    if needs_open_kernel_modules(doc):
        driver = driver.model_copy(update={"kernel_module_type": "open"})
    daemonsets = doc.operator.daemonsets.model_copy(update={"tolerations": _tolerations(doc)})
    operator = doc.operator.model_copy(update={"driver": driver, "daemonsets": daemonsets})
    cluster = doc.cluster.model_copy(update={"operating_systems": _operating_systems(doc)})
    return doc.model_copy(update={"operator": operator, "cluster": cluster})
