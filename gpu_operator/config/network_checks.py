"""Rules about RDMA that span the `network`, `operator`, `nfd` and `pools` sections.

GPUDirect RDMA has two mechanisms (see :mod:`gpu_operator.config.effective`): DMA-BUF, which needs only the open
kernel modules, and the legacy `nvidia-peermem` module (`operator.driver.rdma.enabled`), which needs a MOFED
driver, from the Network Operator's driver container or from the host. These rules refuse the combinations that
deploy but never work: RDMA where no NIC is InfiniBand, peermem waiting for a MOFED nobody installs, two Node
Feature Discoveries labelling the same nodes, an IPoIB network without addresses. Each names the key and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import Problem
from gpu_operator.config.network import network_wanted

__all__ = ["NETWORK_CHECKS"]

Check = Callable[[GpuStackConfig], Iterator[Problem]]


def _sizes(doc: GpuStackConfig) -> str:
    return ", ".join(sorted({pool.vm_size for pool in doc.pools}))


def _rdma_needs_infiniband_pools(doc: GpuStackConfig) -> Iterator[Problem]:
    if not doc.pools or any(pool.has_infiniband for pool in doc.pools):
        return
    fix = ("use an InfiniBand VM size (Standard_ND96asr_v4, Standard_ND96amsr_A100_v4, Standard_ND96isr_H100_v5, "
           "Standard_ND96isr_H200_v5) or declare pools[].gpu.infiniband for a size the catalog does not know")
    if doc.network.enabled:
        yield Problem("network.enabled", f"no pool has InfiniBand ({_sizes(doc)}): {fix}, or set network.enabled: "
                                         "false")
    if doc.operator.driver.rdma.enabled:
        yield Problem("operator.driver.rdma.enabled", f"GPUDirect RDMA needs InfiniBand and no pool has it "
                                                      f"({_sizes(doc)}): {fix}, or set rdma.enabled: false")


def _network_needs_nic_ids(doc: GpuStackConfig) -> Iterator[Problem]:
    if doc.network.enabled and not doc.pools and not doc.network.vf_device_ids:
        yield Problem("network.vfDeviceIds", "without pools the NICs are unknown: list the PCI device ids of the "
                                             "InfiniBand virtual functions (101c ConnectX-6, 101e ConnectX-7)")


def _peermem_needs_mofed(doc: GpuStackConfig) -> Iterator[Problem]:
    rdma = doc.operator.driver.rdma
    if not rdma.enabled:
        return
    network = network_wanted(doc.network, doc.pools)
    # Without pools and without a word on the network, MOFED may come from a Network Operator outside the stack.
    decided = bool(doc.pools) or doc.network.enabled is not None
    if not rdma.use_host_mofed and not network and decided:
        yield Problem(
            "operator.driver.rdma.enabled",
            "legacy nvidia-peermem needs a MOFED driver and none is installed: turn network.enabled on (the "
            "Network Operator's driver container), set operator.driver.rdma.useHostMofed: true where the node "
            "image brings MOFED, or set rdma.enabled: false for DMA-BUF (open kernel modules, no MOFED needed)",
        )
    elif rdma.use_host_mofed and network and doc.network.mofed == "operator":
        yield Problem(
            "operator.driver.rdma.useHostMofed",
            "contradicts network.mofed: operator (the Network Operator installs MOFED): set network.mofed: host "
            "when the node image brings MOFED, or remove useHostMofed",
        )


def _one_nfd(doc: GpuStackConfig) -> Iterator[Problem]:
    if network_wanted(doc.network, doc.pools) and doc.nfd.enabled and "enabled" in doc.nfd.model_fields_set:
        yield Problem(
            "nfd.enabled",
            "the Network Operator runs its own Node Feature Discovery (it labels GPUs too); two NFDs fight over "
            "the same labels: remove nfd.enabled (it is turned off with the Network Operator) or set "
            "network.enabled: false",
        )


def _ipoib_needs_ipam(doc: GpuStackConfig) -> Iterator[Problem]:
    ipoib = doc.network.ipoib
    if ipoib is None:
        return
    if ipoib.ip_pool is None and ipoib.ipam is None:
        yield Problem("network.ipoib.ipPool", "an IPoIB network needs addresses: give ipPool (NVIDIA's IPAM, "
                                              "subnet and perNodeBlockSize) or ipam (another IPAM plugin's JSON)")
    elif ipoib.ip_pool is not None and ipoib.ipam is not None:
        yield Problem("network.ipoib.ipam", "give ipPool or ipam, not both: they are two IPAMs for one network")


NETWORK_CHECKS: tuple[Check, ...] = (
    _rdma_needs_infiniband_pools,
    _network_needs_nic_ids,
    _peermem_needs_mofed,
    _one_nfd,
    _ipoib_needs_ipam,
)
