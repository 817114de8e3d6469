"""A Node's `spec.providerID`, read as the Azure VM scale set instance behind it.

The Azure cloud provider names each node's machine in `spec.providerID`; on an AKS pool of Virtual Machine Scale
Sets that is

    azure:///subscriptions/<subscription>/resourceGroups/<node resource group>/providers/Microsoft.Compute/
        virtualMachineScaleSets/<scale set>/virtualMachines/<instance id>

AKS writes the segment names in varying case (`resourcegroups`, the node resource group `mc_...` in lower case), and
ARM treats names case-insensitively, so the keywords are matched in any case and the values are kept as written.
Anything else (an availability-set or standalone VM, the VMs of an AKS `VirtualMachines` pool, a node that is not
on Azure at all) is refused with a :class:`ProviderIdError` that says what was found and what was expected: the
instance id must be the scale set's numeric instance id, since that is what the VMSS VM API addresses.

NVIDIA's NVSentinel (janitor-provider/pkg/csp/azure/azure.go, `parseAzureProviderID`) splits the string on `/`
and takes fixed positions without checking the keywords; here the whole form is checked, and the subscription is
taken from the providerID (NVSentinel asks the instance metadata service, which names the controller's own
machine, not the node's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ProviderIdError", "VmssInstance", "parse_provider_id"]

SCHEME = "azure://"
#: The form, keywords in any case; each value is one path segment.
_VMSS_INSTANCE = re.compile(
    r"^/subscriptions/(?P<subscription>[^/]+)"
    r"/resourceGroups/(?P<resource_group>[^/]+)"
    r"/providers/Microsoft\.Compute"
    r"/virtualMachineScaleSets/(?P<scale_set>[^/]+)"
    r"/virtualMachines/(?P<instance_id>[^/]+)\Z",
    re.IGNORECASE,
)
_INSTANCE_ID = re.compile(r"[0-9]+")
_EXPECTED = ("azure:///subscriptions/<subscription>/resourceGroups/<resource group>/providers/Microsoft.Compute/"
             "virtualMachineScaleSets/<scale set>/virtualMachines/<instance id>")


class ProviderIdError(ValueError):
    """A providerID that does not name an Azure VM scale set instance."""


@dataclass(frozen=True)
class VmssInstance:
    """One VM of a scale set, as ARM addresses it."""

    subscription: str
    resource_group: str
    scale_set: str
    instance_id: str

    @property
    def resource_id(self) -> str:
        """The instance's ARM resource id (the providerID without its scheme)."""
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}/providers/"
                f"Microsoft.Compute/virtualMachineScaleSets/{self.scale_set}/virtualMachines/{self.instance_id}")

    def __str__(self) -> str:
        return f"{self.scale_set}/{self.instance_id} in {self.resource_group}"


def _why_not(path: str) -> str:
    """What the path names instead of a scale set instance, for the error message."""
    lowered = path.lower()
    if "//" in path:
        return "a path with an empty segment"
    if "/providers/microsoft.compute/virtualmachines/" in lowered:
        return "a standalone VM (an availability-set node or an AKS VirtualMachines pool), not a scale set instance"
    if "/virtualmachinescalesets/" in lowered:
        return "a scale set path that does not end in /virtualMachines/<instance id>"
    return "no Microsoft.Compute scale set instance"


def parse_provider_id(provider_id: str) -> VmssInstance:
    """The scale set instance a Node's `spec.providerID` names; a clear :class:`ProviderIdError` otherwise."""
    if not provider_id:
        raise ProviderIdError("spec.providerID is empty: the node has not been initialised by the Azure cloud "
                              f"provider (expected {_EXPECTED})")
    if not provider_id.lower().startswith(SCHEME):
        scheme = provider_id.split("://", 1)[0] if "://" in provider_id else provider_id
        raise ProviderIdError(f"spec.providerID {provider_id!r} is not an Azure machine (scheme {scheme!r}); "
                              f"expected {_EXPECTED}")
    path = provider_id[len(SCHEME):]
    match = _VMSS_INSTANCE.match(path)
    if match is None:
        raise ProviderIdError(f"spec.providerID {provider_id!r} names {_why_not(path)}; expected {_EXPECTED}")
    if not _INSTANCE_ID.fullmatch(match["instance_id"]):
        raise ProviderIdError(f"spec.providerID {provider_id!r}: instance id {match['instance_id']!r} is not a "
                              "scale set instance id (a number); expected " + _EXPECTED)
    return VmssInstance(**match.groupdict())
