"""A Node's providerID read as the scale set instance behind it, in any case AKS writes it, and nothing else.

The form is the Azure cloud provider's (kubernetes-sigs/cloud-provider-azure, pkg/provider: the scale set's
`scaleSetNameRE` and `resourceGroupRE` match `.../resourceGroups/<rg>/providers/Microsoft.Compute/
virtualMachineScaleSets/<vmss>/virtualMachines/<id>`); NVIDIA's NVSentinel (janitor-provider/pkg/csp/azure/azure.go,
`parseAzureProviderID`) takes path positions 6, 10 and 12 without checking the keywords, which these cases refuse.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.cloud import ProviderIdError, VmssInstance, parse_provider_id

SUB = "9b4c2a55-0c3e-4f57-8d1e-3f5a9c0d7e21"


@pytest.mark.parametrize("provider_id", [
    f"azure:///subscriptions/{SUB}/resourceGroups/MC_rg_aks_westeurope/providers/Microsoft.Compute/"
    "virtualMachineScaleSets/aks-h100-12345678-vmss/virtualMachines/12",
    f"azure:///subscriptions/{SUB}/resourcegroups/MC_rg_aks_westeurope/providers/microsoft.compute/"
    "virtualmachinescalesets/aks-h100-12345678-vmss/virtualmachines/12",
    f"AZURE:///SUBSCRIPTIONS/{SUB}/RESOURCEGROUPS/MC_rg_aks_westeurope/PROVIDERS/MICROSOFT.COMPUTE/"
    "VIRTUALMACHINESCALESETS/aks-h100-12345678-vmss/VIRTUALMACHINES/12",
])
def test_a_scale_set_instance_is_read_in_any_case_with_its_values_as_written(provider_id: str) -> None:
    instance = parse_provider_id(provider_id)
    assert instance == VmssInstance(SUB, "MC_rg_aks_westeurope", "aks-h100-12345678-vmss", "12")
    assert instance.resource_id == (f"/subscriptions/{SUB}/resourceGroups/MC_rg_aks_westeurope/providers/Microsoft."
                                    "Compute/virtualMachineScaleSets/aks-h100-12345678-vmss/virtualMachines/12")


@pytest.mark.parametrize(("provider_id", "says"), [
    ("", "spec.providerID is empty"),
    ("kwok://gpu-node-1", "not an Azure machine (scheme 'kwok')"),
    ("aws:///eu-west-1a/i-0123456789abcdef0", "not an Azure machine (scheme 'aws')"),
    (f"azure:///subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/aks-gpu-0",
     "a standalone VM"),
    (f"azure:///subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/vmss",
     "does not end in /virtualMachines/<instance id>"),
    (f"azure:///subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/"
     "virtualMachines/3/networkInterfaces/nic", "does not end in /virtualMachines/<instance id>"),
    (f"azure:///subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/"
     "virtualMachines/vmss_3", "instance id 'vmss_3' is not a scale set instance id"),
    (f"azure:///subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/vmss/"
     "virtualMachines/", "does not end in /virtualMachines/<instance id>"),
    (f"azure:///subscriptions/{SUB}/resourceGroups//providers/Microsoft.Compute/virtualMachineScaleSets/vmss/"
     "virtualMachines/3", "a path with an empty segment"),
    ("azure:///subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/kubernetes",
     "no Microsoft.Compute scale set instance"),
])
def test_anything_else_is_refused_saying_what_it_is_and_what_was_expected(provider_id: str, says: str) -> None:
    with pytest.raises(ProviderIdError) as raised:
        parse_provider_id(provider_id)
    assert says in str(raised.value)
    assert "/virtualMachineScaleSets/<scale set>/virtualMachines/<instance id>" in str(raised.value)
