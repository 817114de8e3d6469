"""AksCluster under Pulumi mocks: existing vs created cluster, the IB feature, the admin kubeconfig provider."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest
from gpu_operator.components import AksCluster
from gpu_operator.components.aks_cluster import admin_kubeconfig

from gpu_operator.config import ConfigError
from tests.support.azure_mocks import ADMIN_CREDENTIALS, KUBECONFIG, AzureMocks, run_azure_program
from tests.support.pulumi_mocks import Recording

TOKEN = "gpu-operator:index:AksCluster"
SECRET_SIGNATURE_KEY, SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
EXISTING = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}
CREATED = {**EXISTING, "create": True, "location": "westeurope", "kubernetesVersion": "1.34"}


def program(aks: dict[str, Any], outputs: dict[str, Any] | None = None):
    def run() -> pulumi.Output[Any]:
        cluster = AksCluster("aks", {"aks": aks, "azure_provider": azure_native.Provider("azure")})
        return pulumi.Output.all(cluster.resource_group_name, cluster.cluster_name, cluster.kubeconfig).apply(
            lambda values: (outputs if outputs is not None else {}).update(
                zip(["resource_group_name", "cluster_name", "kubeconfig"], values)
            )
        )
    return run


def test_existing_cluster_creates_no_azure_resource_and_looks_up_its_credentials() -> None:
    mocks, outputs = AzureMocks(), {}
    recording = run_azure_program(program(EXISTING, outputs), mocks=mocks)
    assert recording.of_type("azure-native:containerservice:") == []
    assert recording.of_type("azure-native:features:") == []
    [call] = [c for c in mocks.calls if c.token == ADMIN_CREDENTIALS]
    assert (call.args["resourceGroupName"], call.args["resourceName"]) == ("rg-gpu", "aks-gpu")
    provider = recording.of_type("pulumi:providers:azure-native")[0]
    assert call.provider.startswith(provider.urn + "::")
    assert outputs == {"resource_group_name": "rg-gpu", "cluster_name": "aks-gpu", "kubeconfig": KUBECONFIG}


def test_the_kubernetes_provider_is_built_from_the_admin_kubeconfig_as_a_secret() -> None:
    recording = run_azure_program(program(EXISTING))
    component = recording.of_type(TOKEN)[0]
    [provider] = recording.of_type("pulumi:providers:kubernetes")
    assert provider.parent == component.urn
    assert provider.name == "aks-kubernetes"
    kubeconfig = provider.inputs["kubeconfig"]
    # a secret reaches the engine wrapped in Pulumi's secret signature, never as plain text
    assert isinstance(kubeconfig, dict) and kubeconfig.get("value") == KUBECONFIG
    assert kubeconfig.get(SECRET_SIGNATURE_KEY) == SECRET_SIGNATURE


def test_created_cluster() -> None:
    recording = run_azure_program(program(CREATED))
    [cluster] = recording.of_type("azure-native:containerservice:ManagedCluster")
    assert cluster.parent == recording.of_type(TOKEN)[0].urn
    assert (cluster.inputs["resourceGroupName"], cluster.inputs["resourceName"]) == ("rg-gpu", "aks-gpu")
    assert cluster.inputs["oidcIssuerProfile"] == {"enabled": True}
    assert cluster.inputs["identity"] == {"type": "SystemAssigned"}
    assert cluster.inputs["agentPoolProfiles"][0]["mode"] == "System"
    assert cluster.provider.startswith(recording.of_type("pulumi:providers:azure-native")[0].urn + "::")


def test_infiniband_feature_registration_only_when_asked() -> None:
    assert run_azure_program(program(EXISTING)).of_type("azure-native:features:") == []
    recording = run_azure_program(program({**EXISTING, "registerInfinibandFeature": True}))
    [feature] = recording.of_type("azure-native:features:SubscriptionFeatureRegistration")
    assert feature.inputs == {"providerNamespace": "Microsoft.ContainerService", "featureName": "AKSInfinibandSupport"}


def test_admin_kubeconfig_decodes_the_first_credential() -> None:
    encoded = base64.b64encode(b"apiVersion: v1\n").decode()
    assert admin_kubeconfig([SimpleNamespace(value=encoded), SimpleNamespace(value="")]) == "apiVersion: v1\n"
    with pytest.raises(ValueError, match="no admin kubeconfig"):
        admin_kubeconfig([])


def test_bad_aks_section_registers_nothing() -> None:
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_azure_program(program({"resourceGroup": "rg-gpu", "clusterName": "-x", "creat": True}), recording=recording)
    assert {p.path for p in error.value.problems} == {"aks.clusterName", "aks.creat"}
    assert [r.type for r in recording.registrations] == ["pulumi:providers:azure-native"]
