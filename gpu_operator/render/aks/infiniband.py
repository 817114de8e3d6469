"""What a pool with InfiniBand brings into the stack besides itself, said where it happens.

A VM size with InfiniBand NICs (`Standard_ND96isr_H100_v5`, ...) turns on NVIDIA's Network Operator unless
`network.enabled` says otherwise: its Helm chart in `network.namespace`, a NicClusterPolicy whose DOCA-OFED driver
container compiles MOFED on the pool's nodes (`network.mofed: operator`, the default), and the Network Operator's
Node Feature Discovery in place of the GPU operator's own (two NFDs would fight over the same node labels).
:func:`infiniband_notes` says so in words for `gpu-operator render`.

Such a pool's VMs share one InfiniBand fabric only with the subscription feature `AKSInfinibandSupport` registered
(Azure/aks-rdma-infiniband's setup registers it first); without it, AKS may spread a large pool over fabrics and RDMA
fails between some pairs of nodes. :func:`unregistered_infiniband_pools` names the pools of an AKS config that does
not register it (`aks.registerInfinibandFeature`), for `gpu-operator check`.
"""

from __future__ import annotations

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.network import network_wanted
from gpu_operator.config.pools import GpuPool

__all__ = ["infiniband_pools", "infiniband_notes", "unregistered_infiniband_pools"]


def infiniband_pools(config: GpuStackConfig) -> tuple[GpuPool, ...]:
    """The pools whose VM size has InfiniBand NICs."""
    return tuple(pool for pool in config.pools if pool.has_infiniband)


def _described(pools: tuple[GpuPool, ...]) -> str:
    named = ", ".join(f"{pool.name} ({pool.vm_size})" for pool in pools)
    return f"pool{'s' if len(pools) > 1 else ''} {named} {'have' if len(pools) > 1 else 'has'} InfiniBand"


def infiniband_notes(config: GpuStackConfig) -> list[str]:
    """What the InfiniBand pools add to the stack (empty without such pools or with the Network Operator off)."""
    pools = infiniband_pools(config)
    network = config.network
    if not pools or not network_wanted(network, config.pools):
        return []
    added = [f"NVIDIA's Network Operator (Helm chart network-operator {network.chart_version} in namespace "
             f"{network.namespace})"]
    if network.mofed == "operator":
        added.append("a DOCA-OFED driver container that compiles MOFED on their nodes (network.mofed: operator)")
    added.append("the Network Operator's Node Feature Discovery in place of the GPU operator's (nfd.enabled off)")
    return [f"{_described(pools)}, so the stack adds {'; '.join(added)}; set network.enabled: false to leave "
            "InfiniBand unwired"]


def unregistered_infiniband_pools(config: GpuStackConfig) -> tuple[str, ...]:
    """The InfiniBand pools of an AKS cluster whose config does not register `AKSInfinibandSupport`."""
    aks = config.aks
    if aks is None or aks.register_infiniband_feature:
        return ()
    return tuple(pool.name for pool in infiniband_pools(config))
