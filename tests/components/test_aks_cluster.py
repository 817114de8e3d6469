"""AksCluster under Pulumi mocks: existing vs created cluster, credentials (admin, user, exec) and their ordering,
protection, the InfiniBand feature (kept on delete, waited for), preview and a slow provider."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest
import yaml
from gpu_operator.components import AksCluster
from gpu_operator.components.component_args import ComponentArgsError
from gpu_operator.components.feature_registration import FeatureNotRegisteredError, FeatureWait

from gpu_operator.config import ConfigError
from tests.support.azure_mocks import (
    ADMIN_CREDENTIALS,
    EXEC_KUBECONFIG,
    FEATURE_LOOKUP,
    KUBECONFIG,
    USER_CREDENTIALS,
    USER_KUBECONFIG,
    AzureMocks,
    run_azure_program,
)
from tests.support.pulumi_mocks import Recording

TOKEN = "gpu-operator:index:AksCluster"
STASH = "pulumi:index:Stash"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
FEATURE = "azure-native:features:SubscriptionFeatureRegistration"
SECRET_SIGNATURE_KEY, SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
EXISTING = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu"}
CREATED = {**EXISTING, "create": True, "location": "westeurope", "kubernetesVersion": "1.34"}
NO_WAIT = FeatureWait(timeout_seconds=60, interval_seconds=0)
OUTPUTS = ["resource_group_name", "cluster_name", "kubeconfig", "provider_kubeconfig"]


def program(aks: dict[str, Any], outputs: dict[str, Any] | None = None, **extra: Any):
    def run() -> pulumi.Output[Any]:
        cluster = AksCluster("aks", {"aks": aks, "azure_provider": azure_native.Provider("azure"),
                                     "feature_wait": NO_WAIT, **extra})
        values = [getattr(cluster, name) for name in OUTPUTS]

        async def collect() -> None:
            resolved = [await value.future() for value in values]
            flags = [await cluster.kubeconfig.is_secret(), await cluster.provider_kubeconfig.is_secret()]
            if outputs is not None:
                outputs.update(zip(OUTPUTS, resolved))
                outputs["secret"] = flags

        return pulumi.Output.from_input(collect())
    return run


def calls(mocks: AzureMocks, token: str) -> list[Any]:
    return [call for call in mocks.calls if call.token == token]


def test_existing_cluster_creates_no_azure_resource_and_looks_up_its_credentials() -> None:
    mocks, outputs = AzureMocks(), {}
    recording = run_azure_program(program(EXISTING, outputs), mocks=mocks)
    assert recording.of_type("azure-native:containerservice:") == []
    assert recording.of_type("azure-native:features:") == []
    [admin] = calls(mocks, ADMIN_CREDENTIALS)
    assert (admin.args["resourceGroupName"], admin.args["resourceName"]) == ("rg-gpu", "aks-gpu")
    [user] = calls(mocks, USER_CREDENTIALS)
    assert user.args["format"] == "exec"
    provider = recording.of_type("pulumi:providers:azure-native")[0]
    assert admin.provider.startswith(provider.urn + "::") and user.provider.startswith(provider.urn + "::")
    assert outputs["resource_group_name"] == "rg-gpu" and outputs["cluster_name"] == "aks-gpu"
    assert outputs["provider_kubeconfig"] == KUBECONFIG  # aks.credentials: admin (the default)
    assert outputs["secret"] == [True, True]


def test_the_exported_kubeconfig_is_the_user_credential_never_the_admin_one() -> None:
    for credentials in ("admin", "user", "exec"):
        outputs: dict[str, Any] = {}
        run_azure_program(program({**EXISTING, "credentials": credentials}, outputs))
        assert outputs["kubeconfig"] == EXEC_KUBECONFIG, credentials
        assert "clusterAdmin" not in outputs["kubeconfig"]


def test_the_kubernetes_provider_signs_in_as_credentials_says_and_keeps_it_secret() -> None:
    recording = run_azure_program(program(EXISTING))
    component = recording.of_type(TOKEN)[0]
    [provider] = recording.of_type("pulumi:providers:kubernetes")
    assert provider.parent == component.urn
    assert provider.name == "aks-kubernetes"
    kubeconfig = provider.inputs["kubeconfig"]
    # a secret reaches the engine wrapped in Pulumi's secret signature, never as plain text
    assert isinstance(kubeconfig, dict) and kubeconfig.get("value") == KUBECONFIG
    assert kubeconfig.get(SECRET_SIGNATURE_KEY) == SECRET_SIGNATURE
    # a rotated credential or another `credentials` must not replace the provider (and every object with it)
    assert provider.inputs["clusterIdentifier"] == "aks:rg-gpu/aks-gpu"


def test_user_credentials() -> None:
    mocks, outputs = AzureMocks(), {}
    run_azure_program(program({**EXISTING, "credentials": "user"}, outputs), mocks=mocks)
    assert calls(mocks, ADMIN_CREDENTIALS) == []
    assert sorted(call.args.get("format") or "" for call in calls(mocks, USER_CREDENTIALS)) == ["", "exec"]
    assert outputs["provider_kubeconfig"] == USER_KUBECONFIG


@pytest.mark.parametrize("mode", [None, "workloadidentity", "spn"])
def test_exec_credentials_never_touch_the_admin_account_and_sign_in_without_a_browser(mode: str | None) -> None:
    aks = {**EXISTING, "credentials": "exec", **({"kubeloginMode": mode} if mode else {})}
    mocks, outputs = AzureMocks(), {}
    run_azure_program(program(aks, outputs), mocks=mocks)
    assert calls(mocks, ADMIN_CREDENTIALS) == []  # fails on clusters with local accounts disabled
    [user] = calls(mocks, USER_CREDENTIALS)
    assert user.args["format"] == "exec"
    exec_spec = yaml.safe_load(outputs["provider_kubeconfig"])["users"][0]["user"]["exec"]
    assert exec_spec["command"] == "kubelogin"
    args = exec_spec["args"]
    assert args.count("--login") == 1 and args[args.index("--login") + 1] == (mode or "azurecli")
    assert "devicecode" not in args
    assert outputs["secret"] == [True, True]


def test_credentials_are_looked_up_only_once_the_created_cluster_exists() -> None:
    # a slow provider: the cluster takes a while; a lookup issued before it resolves would fail on a real cluster
    mocks = AzureMocks(delays={MANAGED_CLUSTER: 0.3})
    recording = run_azure_program(program(CREATED), mocks=mocks)
    created = recording.position("resolved", "aks-cluster")
    for token in (ADMIN_CREDENTIALS, USER_CREDENTIALS):
        assert recording.position("invoke", token) > created, token


def test_preview_of_a_new_cluster_looks_up_nothing() -> None:
    mocks, outputs = AzureMocks(preview=True), {}
    recording = run_azure_program(program(CREATED, outputs), mocks=mocks)
    assert recording.of_type(MANAGED_CLUSTER)
    assert calls(mocks, ADMIN_CREDENTIALS) == calls(mocks, USER_CREDENTIALS) == []
    assert outputs["kubeconfig"] is None and outputs["provider_kubeconfig"] is None  # unknown until the cluster exists
    assert outputs["secret"] == [True, True]


def test_preview_of_an_existing_cluster_reads_its_credentials() -> None:
    mocks, outputs = AzureMocks(preview=True), {}
    run_azure_program(program(EXISTING, outputs), mocks=mocks)
    assert calls(mocks, ADMIN_CREDENTIALS) and calls(mocks, USER_CREDENTIALS)
    assert outputs["provider_kubeconfig"] == KUBECONFIG


def test_created_cluster_is_protected_and_guarded_by_the_outage_warning() -> None:
    recording = run_azure_program(program(CREATED))
    [cluster] = recording.of_type(MANAGED_CLUSTER)
    assert cluster.parent == recording.of_type(TOKEN)[0].urn
    assert (cluster.inputs["resourceGroupName"], cluster.inputs["resourceName"]) == ("rg-gpu", "aks-gpu")
    assert cluster.inputs["oidcIssuerProfile"] == {"enabled": True}
    assert cluster.inputs["identity"] == {"type": "SystemAssigned"}
    assert cluster.inputs["agentPoolProfiles"][0]["mode"] == "System"
    assert cluster.provider.startswith(recording.of_type("pulumi:providers:azure-native")[0].urn + "::")
    assert cluster.protect
    assert cluster.hooks == {}  # a delete hook would make the engine refuse a plain `pulumi destroy`
    [guard] = recording.of_type(STASH)
    assert guard.hooks == {"before_update": ("aks-cluster-gpu-outage-warning",)}
    assert guard.urn in cluster.dependencies
    assert guard.inputs["input"] == {"type": MANAGED_CLUSTER, "resources": {
        "aks-cluster": {"resourceGroup": "rg-gpu", "name": "aks-gpu", "location": cluster.inputs["location"]}}}
    unprotected = run_azure_program(program({**CREATED, "protect": False})).of_type(MANAGED_CLUSTER)[0]
    assert not unprotected.protect


def test_infiniband_feature_registration_only_when_asked_and_kept_on_delete() -> None:
    assert run_azure_program(program(EXISTING)).of_type("azure-native:features:") == []
    recording = run_azure_program(program({**EXISTING, "registerInfinibandFeature": True}))
    [feature] = recording.of_type(FEATURE)
    assert feature.inputs == {"providerNamespace": "Microsoft.ContainerService", "featureName": "AKSInfinibandSupport"}
    # destroying the stack must not unregister the feature for the whole subscription
    assert feature.retain_on_delete
    assert not feature.protect


def test_cluster_name_waits_until_the_feature_is_registered() -> None:
    mocks, seen = AzureMocks(registering_polls=2), []

    def run() -> pulumi.Output[Any]:
        aks = {**EXISTING, "registerInfinibandFeature": True}
        cluster = AksCluster("aks", {"aks": aks, "azure_provider": azure_native.Provider("azure"),
                                     "feature_wait": NO_WAIT})
        # pools are created with this name: it must not resolve before the feature is Registered
        return cluster.cluster_name.apply(lambda name: seen.append((name, len(calls(mocks, FEATURE_LOOKUP)))))

    recording = run_azure_program(run, mocks=mocks)
    lookups = calls(mocks, FEATURE_LOOKUP)
    assert len(lookups) == 3  # Registering, Registering, Registered
    assert lookups[0].args == {"providerNamespace": "Microsoft.ContainerService", "featureName": "AKSInfinibandSupport"}
    assert seen == [("aks-gpu", 3)]
    assert recording.position("invoke", FEATURE_LOOKUP) > recording.position("resolved", "aks-infiniband-feature")


def test_a_feature_that_never_registers_fails_with_the_state_and_what_to_run() -> None:
    mocks = AzureMocks(feature_state="Pending")
    aks = {**EXISTING, "registerInfinibandFeature": True}
    with pytest.raises(FeatureNotRegisteredError) as error:
        run_azure_program(program(aks, feature_wait=FeatureWait(timeout_seconds=0, interval_seconds=0)), mocks=mocks)
    message = str(error.value)
    assert "Microsoft.ContainerService/AKSInfinibandSupport is still Pending" in message
    assert "az feature show --namespace Microsoft.ContainerService --name AKSInfinibandSupport" in message


def test_register_outputs() -> None:
    recording = run_azure_program(program(EXISTING))
    [component] = recording.of_type(TOKEN)
    outputs = recording.outputs[component.urn]
    assert set(outputs) == {"resourceGroupName", "clusterName", "kubeconfig"}
    assert outputs["clusterName"] == "aks-gpu"
    assert outputs["kubeconfig"][SECRET_SIGNATURE_KEY] == SECRET_SIGNATURE


def test_bad_aks_section_registers_nothing() -> None:
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_azure_program(program({"resourceGroup": "rg-gpu", "clusterName": "-x", "creat": True}), recording=recording)
    assert {p.path for p in error.value.problems} == {"aks.clusterName", "aks.creat"}
    assert [r.type for r in recording.registrations] == ["pulumi:providers:azure-native"]


def test_kubelogin_mode_without_exec_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        run_azure_program(program({**EXISTING, "kubeloginMode": "azurecli"}))
    [problem] = error.value.problems
    assert problem.path == "aks.kubeloginMode" and "credentials: exec" in problem.message


def test_without_a_provider_the_error_names_the_argument() -> None:
    def run() -> None:
        AksCluster("aks", {"aks": EXISTING})  # type: ignore[typeddict-item]

    with pytest.raises(ComponentArgsError, match=r"AksCluster\('aks'\): args\['azure_provider'\] is required"):
        run_azure_program(run)


def test_a_preview_never_waits_for_the_feature_and_says_what_up_will_wait_for(monkeypatch: pytest.MonkeyPatch) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    mocks, outputs = AzureMocks(preview=True, existing=(FEATURE,), feature_state="Pending"), {}
    aks = {**EXISTING, "registerInfinibandFeature": True}
    # a zero timeout: were the preview to wait, it would fail at once
    run_azure_program(program(aks, outputs, feature_wait=FeatureWait(timeout_seconds=0, interval_seconds=0)),
                      mocks=mocks)
    assert len(calls(mocks, FEATURE_LOOKUP)) == 1
    assert outputs["cluster_name"] == "aks-gpu"
    [warning] = warnings
    assert warning.startswith("subscription feature Microsoft.ContainerService/AKSInfinibandSupport is Pending: "
                              "`pulumi up` waits up to ")
    assert warning.endswith("for it to be Registered before creating GPU pools")
