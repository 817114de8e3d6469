"""Azure subscription features that GPU node pools depend on.

`AKSInfinibandSupport` (provider namespace `Microsoft.ContainerService`) makes AKS place the VMs of one node pool
on the same InfiniBand fabric, so that RDMA works between every pair of nodes in an IB pool rather than only
within subsets of a large scale set. Registering it is a subscription-wide, asynchronous operation.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SubscriptionFeature", "INFINIBAND_SUPPORT"]


@dataclass(frozen=True)
class SubscriptionFeature:
    """A preview feature registered per subscription (`az feature register --namespace ... --name ...`)."""

    provider_namespace: str
    name: str


INFINIBAND_SUPPORT = SubscriptionFeature("Microsoft.ContainerService", "AKSInfinibandSupport")
