"""Cloud repair of GPU nodes: reboot and reimage through the cloud's API, or hand the node to AKS.

The remediation controller's `reboot` and `reimage` rungs act through the cloud where the node is a cloud machine
(`remediation.cloud.provider: azure`): the node's own agent cannot reboot a host whose GPU hung the kernel, and only
the cloud can reimage. This package is what the controller calls:

* :func:`aks_hand_off` first (pure): a NotReady node is left to AKS node auto-repair where the hand-off is
  configured (:mod:`.aks_auto_repair` says what AKS does and why nothing else is handed over);
* otherwise :class:`~.azure_vmss.AzureVmss` (`reboot`, `reimage`, `instance_state`), given the Node's
  `spec.providerID`, which returns a :class:`CloudResult`: `succeeded`, `failed` with a reason, `throttled` (with
  ARM's `Retry-After`), `conflict` or `timed-out`, and whether the same action may be tried again.

This module imports no cloud SDK: `AzureVmss` lives in :mod:`.azure_vmss`, which loads azure-mgmt-compute and
azure-identity, and is imported only by a controller configured for Azure (it is also reachable lazily as
`gpu_operator.agents.cloud.AzureVmss`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpu_operator.agents.cloud.aks_auto_repair import AKS_REPAIR_EVENTS, AksRepairEvent, HandOff, aks_hand_off
from gpu_operator.agents.cloud.provider_id import ProviderIdError, VmssInstance, parse_provider_id
from gpu_operator.agents.cloud.result import CloudAction, CloudOutcome, CloudResult, InstanceState

if TYPE_CHECKING:
    from gpu_operator.agents.cloud.azure_vmss import AzureVmss, AzureVmssSettings

__all__ = [
    "AKS_REPAIR_EVENTS",
    "AksRepairEvent",
    "AzureVmss",
    "AzureVmssSettings",
    "CloudAction",
    "CloudOutcome",
    "CloudResult",
    "HandOff",
    "InstanceState",
    "ProviderIdError",
    "VmssInstance",
    "aks_hand_off",
    "parse_provider_id",
]

_LAZY = frozenset({"AzureVmss", "AzureVmssSettings"})


def __getattr__(name: str) -> Any:
    """`AzureVmss` and its settings, loading the Azure SDK only when asked for."""
    if name in _LAZY:
        from gpu_operator.agents.cloud import azure_vmss

        return getattr(azure_vmss, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
