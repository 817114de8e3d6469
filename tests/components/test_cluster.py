"""GpuCluster under Pulumi mocks: cluster → pools → operator, providers, tolerations flowing from the pools."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_azure_native as azure_native
import pytest
from gpu_operator.components import GpuCluster
from gpu_operator.components.component_args import ComponentArgsError
from gpu_operator.components.feature_registration import FeatureWait

from gpu_operator.config import ConfigError
from tests.support.azure_mocks import (
    ADMIN_CREDENTIALS,
    EXEC_KUBECONFIG,
    FEATURE_LOOKUP,
    KUBECONFIG,
    USER_CREDENTIALS,
    AzureMocks,
    run_azure_program,
)
from tests.support.pulumi_mocks import Recording

CLUSTER = "gpu-operator:index:GpuCluster"
AKS_CLUSTER = "gpu-operator:index:AksCluster"
NODE_POOL = "gpu-operator:index:GpuNodePool"
OPERATOR = "gpu-operator:index:GpuOperator"
AGENT_POOL = "azure-native:containerservice:AgentPool"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
DOCUMENT = {
    "aks": {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34", "create": True,
            "location": "westeurope", "registerInfinibandFeature": True},
    "pools": [
        {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2, "migConfig": "all-1g.10gb"},
        {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "taints": ["sku=gpu:NoSchedule", "team=ml:NoExecute"]},
    ],
    "cluster": {"prometheusOperator": False},
}
NO_WAIT = FeatureWait(timeout_seconds=60, interval_seconds=0)
OUTPUT_NAMES = ["kubeconfig", "cluster_name", "resource_group_name", "pool_names", "gpu_resource_names",
                "node_selector_labels", "tolerations"]


def program(document: dict[str, Any], outputs: dict[str, Any] | None = None, **extra: Any):
    def run() -> pulumi.Output[Any]:
        cluster = GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure"),
                                     "feature_wait": NO_WAIT, **extra})
        values = [getattr(cluster, name) for name in OUTPUT_NAMES]
        return pulumi.Output.all(*values).apply(
            lambda resolved: (outputs if outputs is not None else {}).update(zip(OUTPUT_NAMES, resolved))
        )
    return run


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_azure_program(program(DOCUMENT))


def children(recording: Recording, parent_urn: str) -> list[Any]:
    return [r for r in recording.registrations if r.parent == parent_urn]


def test_tree(recording: Recording) -> None:
    [cluster] = recording.of_type(CLUSTER)
    assert {r.type for r in children(recording, cluster.urn)} == {
        AKS_CLUSTER, NODE_POOL, OPERATOR, "pulumi:providers:kubernetes", "gpu-operator:index:NetworkOperator",
        "pulumi:index:Stash",
    }
    [pools_guard] = [r for r in children(recording, cluster.urn) if r.type == "pulumi:index:Stash"]
    assert pools_guard.hooks == {"before_update": ("gpu-pools-gpu-outage-warning",)}
    assert pools_guard.inputs["input"]["resources"] == {"gpu-h100-agentpool": {}, "gpu-t4-agentpool": {}}
    assert sorted(r.inputs["pool"] for r in recording.of_type(NODE_POOL)) == ["h100", "t4"]
    assert all(r.parent == cluster.urn for r in recording.of_type(NODE_POOL) + recording.of_type(OPERATOR))
    urns = [r.urn for r in recording.registrations]
    assert len(urns) == len(set(urns))


def test_agent_pools_skip_the_aks_driver_and_carry_taints_and_labels(recording: Recording) -> None:
    pools = {r.inputs["agentPoolName"]: r.inputs for r in recording.of_type(AGENT_POOL)}
    assert set(pools) == {"h100", "t4"}
    assert all(inputs["gpuProfile"] == {"driver": "None"} for inputs in pools.values())
    assert pools["h100"]["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert pools["t4"]["nodeTaints"] == ["sku=gpu:NoSchedule", "team=ml:NoExecute"]
    assert pools["h100"]["nodeLabels"]["nvidia.com/mig.config"] == "all-1g.10gb"
    assert pools["h100"]["nodeLabels"]["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert "nvidia.com/gpu.deploy.mig-manager" not in pools["t4"]["nodeLabels"]


def test_every_operand_daemonset_tolerates_every_pool_taint(recording: Recording) -> None:
    daemonsets = recording.of_type(DAEMONSET)
    assert daemonsets
    for ds in daemonsets:
        tolerations = ds.inputs["spec"]["template"]["spec"]["tolerations"]
        assert SKU_GPU in tolerations, ds.name
        assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoExecute"} in tolerations, ds.name


def test_every_daemonset_selects_a_label_the_pools_carry(recording: Recording) -> None:
    labels = {key for r in recording.of_type(AGENT_POOL) for key in r.inputs["nodeLabels"]}
    for ds in recording.of_type(DAEMONSET):
        selector = ds.inputs["spec"]["template"]["spec"]["nodeSelector"]
        deploy = [key for key in selector if key.startswith("nvidia.com/gpu.deploy.")]
        assert deploy and set(deploy) <= labels, ds.name


def test_nfd_worker_tolerates_the_pool_taints(recording: Recording) -> None:
    # InfiniBand pools: the Network Operator's chart runs the cluster's one NFD
    [chart] = recording.of_type("kubernetes:helm.sh/v4:Chart")
    assert SKU_GPU in chart.inputs["values"]["node-feature-discovery"]["worker"]["tolerations"]


def test_infiniband_pools_get_the_network_operator_before_the_gpu_operator(recording: Recording) -> None:
    [network] = recording.of_type("gpu-operator:index:NetworkOperator")
    [policy] = recording.of_type("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy")
    [operator] = recording.of_type(OPERATOR)
    assert policy.parent == network.urn and policy.urn in operator.dependencies
    assert not recording.of_type("gpu-operator:index:NodeFeatureDiscovery")


def test_kubernetes_resources_use_the_clusters_provider(recording: Recording) -> None:
    [cluster] = recording.of_type(CLUSTER)
    [provider] = recording.of_type("pulumi:providers:kubernetes")
    assert provider.parent == cluster.urn
    assert provider.inputs["kubeconfig"]["value"] == KUBECONFIG  # aks.credentials: admin
    assert provider.inputs["clusterIdentifier"] == "aks:rg-gpu/aks-gpu"
    assert "upsertExistingObjects" not in provider.inputs
    assert provider.inputs["enablePatchForce"] == "true"  # the stack owns the fields it sets (kubernetes_provider)
    resources = recording.of_type("kubernetes:")
    assert resources
    assert all(r.provider.startswith(provider.urn + "::") for r in resources)


def test_azure_resources_use_the_explicit_provider(recording: Recording) -> None:
    [provider] = recording.of_type("pulumi:providers:azure-native")
    resources = recording.of_type("azure-native:")
    assert {r.type for r in resources} == {
        AGENT_POOL, "azure-native:containerservice:ManagedCluster",
        "azure-native:features:SubscriptionFeatureRegistration",
    }
    assert all(r.provider.startswith(provider.urn + "::") for r in resources)


def test_pools_wait_for_the_cluster_and_the_feature(recording: Recording) -> None:
    [cluster] = recording.of_type("azure-native:containerservice:ManagedCluster")
    [feature] = recording.of_type("azure-native:features:SubscriptionFeatureRegistration")
    for pool in recording.of_type(AGENT_POOL):
        assert {cluster.urn, feature.urn} <= set(pool.dependencies), pool.name


def test_the_operator_waits_for_every_pool(recording: Recording) -> None:
    pools = {r.urn for r in recording.of_type(AGENT_POOL)}
    [operator] = recording.of_type(OPERATOR)
    assert pools <= set(operator.dependencies)
    # the operator's objects wait through their provider (a component's depends_on does not reach its children)
    [provider] = recording.of_type("pulumi:providers:kubernetes")
    assert pools <= set(provider.dependencies)
    assert all(r.provider.startswith(provider.urn + "::") for r in recording.of_type("kubernetes:"))


def test_the_effective_config_reaches_the_operands(recording: Recording) -> None:
    [driver] = [r for r in recording.of_type(DAEMONSET) if r.inputs["metadata"]["name"].startswith("nvidia-driver")]
    container = driver.inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].endswith("-ubuntu22.04")
    assert {"name": "KERNEL_MODULE_TYPE", "value": "open"} in container["env"]


def test_outputs() -> None:
    outputs: dict[str, Any] = {}
    run_azure_program(program(DOCUMENT, outputs))
    assert outputs["kubeconfig"] == EXEC_KUBECONFIG  # the user credential, not the admin account
    assert (outputs["resource_group_name"], outputs["cluster_name"]) == ("rg-gpu", "aks-gpu")
    assert outputs["pool_names"] == ["h100", "t4"]
    assert outputs["gpu_resource_names"] == ["nvidia.com/gpu"]
    assert outputs["node_selector_labels"] == {"h100": {"kubernetes.azure.com/agentpool": "h100"},
                                               "t4": {"kubernetes.azure.com/agentpool": "t4"}}
    assert outputs["tolerations"]["h100"] == [SKU_GPU]
    assert outputs["tolerations"]["t4"][1] == {"key": "team", "operator": "Equal", "value": "ml",
                                               "effect": "NoExecute"}


def test_a_cluster_without_pools() -> None:
    outputs: dict[str, Any] = {}
    recording = run_azure_program(program({"aks": DOCUMENT["aks"]}, outputs))
    assert recording.of_type(AGENT_POOL) == [] and recording.of_type(OPERATOR)
    assert (outputs["pool_names"], outputs["node_selector_labels"], outputs["tolerations"]) == ([], {}, {})


@pytest.mark.parametrize("document, paths", [
    ({**DOCUMENT, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "gpuDriver": "aks"}]},
     {"operator.driver.enabled", "operator.toolkit.enabled"}),
    ({**DOCUMENT, "pools": [{"name": "v100", "vmSize": "Standard_ND40rs_v2"}]}, {"pools[0].vmSize"}),
    ({**DOCUMENT, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "migConfig": "all-1g.5gb"}]},
     {"pools[0].migConfig"}),
    ({**DOCUMENT, "pools": [{"name": "gpupoolfortraining", "vmSize": "Standard_NC4as_T4_v3"}]}, {"pools[0].name"}),
    ({**DOCUMENT, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3",
                             "autoscale": {"minCount": 4, "maxCount": 2}}]}, {"pools[0].autoscale"}),
    ({"pools": []}, {"aks"}),
])
def test_errors_before_anything_is_registered(document: dict[str, Any], paths: set[str]) -> None:
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_azure_program(program(document), recording=recording)
    assert {p.path for p in error.value.problems} == paths
    assert [r.type for r in recording.registrations] == ["pulumi:providers:azure-native"]


def test_kubernetes_objects_and_pools_are_deleted_with_a_created_cluster(recording: Recording) -> None:
    [cluster] = recording.of_type("azure-native:containerservice:ManagedCluster")
    deleted_with = [r for r in recording.registrations if r.type.startswith("kubernetes:") or r.type == AGENT_POOL]
    assert deleted_with
    for resource in deleted_with:
        assert resource.deleted_with == cluster.urn, resource.name


def test_nothing_is_deleted_with_an_existing_cluster_but_the_operators_namespace_holds_its_objects() -> None:
    recording = run_azure_program(program({**DOCUMENT, "aks": {**DOCUMENT["aks"], "create": False,
                                                               "location": None}}))
    [namespace] = [r for r in recording.of_type("kubernetes:core/v1:Namespace")
                   if r.inputs["metadata"]["name"] == "gpu-operator"]
    for resource in recording.registrations:
        in_namespace = (resource.type.startswith("kubernetes:") and resource.type != "kubernetes:helm.sh/v4:Chart"
                        and resource.inputs.get("metadata", {}).get("namespace") == "gpu-operator"
                        and resource.parent != namespace.parent and "GpuOperand" in resource.parent)
        assert resource.deleted_with == (namespace.urn if in_namespace else ""), resource.name


def test_wait_for_daemonsets_reaches_the_operator() -> None:
    recording = run_azure_program(program(DOCUMENT, wait_for_daemonsets=True))
    daemonsets = recording.of_type(DAEMONSET)
    assert daemonsets
    for ds in daemonsets:
        # a driver DaemonSet is never awaited: under the controller it is OnDelete, without it it rolls node by
        # node, minutes each, beyond the provider's timeout
        driver = ds.inputs["metadata"]["labels"].get("app.kubernetes.io/component") == "nvidia-driver"
        awaited = ds.inputs["spec"].get("updateStrategy", {}).get("type") != "OnDelete" and not driver
        assert ("pulumi.com/skipAwait" not in ds.inputs["metadata"].get("annotations", {})) == awaited, ds.name


def test_adopting_existing_objects_reaches_the_kubernetes_provider() -> None:
    recording = run_azure_program(program(DOCUMENT, adopt_existing_objects=True))
    [provider] = recording.of_type("pulumi:providers:kubernetes")
    assert provider.inputs["upsertExistingObjects"] == "true"


def test_register_outputs(recording: Recording) -> None:
    [cluster] = recording.of_type(CLUSTER)
    outputs = recording.outputs[cluster.urn]
    assert set(outputs) == {"kubeconfig", "clusterName", "resourceGroupName", "poolNames", "gpuResourceNames",
                            "nodeSelectorLabels", "tolerations"}
    assert outputs["poolNames"] == ["h100", "t4"]
    assert outputs["kubeconfig"]["value"] == EXEC_KUBECONFIG


def test_pools_are_created_once_the_infiniband_feature_is_registered() -> None:
    mocks = AzureMocks(registering_polls=2)
    recording = run_azure_program(program(DOCUMENT), mocks=mocks)
    last_lookup = max(i for i, e in enumerate(recording.timeline) if e.kind == "invoke" and e.subject == FEATURE_LOOKUP)
    assert sum(1 for call in mocks.calls if call.token == FEATURE_LOOKUP) == 3
    for pool in recording.of_type(AGENT_POOL):
        assert recording.position("register", pool.name) > last_lookup, pool.name


def test_a_slow_provider_still_gets_cluster_then_pools_then_operands() -> None:
    # pools take a while: no Kubernetes object may be sent before every pool (and the cluster) exists
    mocks = AzureMocks(delays={AGENT_POOL: 0.2, "azure-native:containerservice:ManagedCluster": 0.2})
    recording = run_azure_program(program(DOCUMENT), mocks=mocks)
    cluster_created = recording.position("resolved", "gpu-aks-cluster")
    pools_created = max(recording.position("resolved", pool.name) for pool in recording.of_type(AGENT_POOL))
    for pool in recording.of_type(AGENT_POOL):
        assert recording.position("register", pool.name) > cluster_created
    objects = recording.of_type("kubernetes:")
    assert objects
    assert min(recording.position("register", r.name) for r in objects) > pools_created
    for token in (ADMIN_CREDENTIALS, USER_CREDENTIALS):
        assert recording.position("invoke", token) > cluster_created


def test_preview_of_a_new_fleet() -> None:
    mocks, outputs = AzureMocks(preview=True), {}
    recording = run_azure_program(program(DOCUMENT, outputs), mocks=mocks)
    # nothing is looked up in a cluster that does not exist yet; everything is still planned
    assert [c.token for c in mocks.calls if c.token in (ADMIN_CREDENTIALS, USER_CREDENTIALS)] == []
    assert len(recording.of_type(AGENT_POOL)) == 2
    assert recording.of_type(DAEMONSET)
    assert outputs == {}  # every output waits on the cluster: unknown in preview


def test_gpu_resource_names_include_the_mig_profiles_the_pools_fix() -> None:
    outputs: dict[str, Any] = {}
    document = {**DOCUMENT, "operator": {"mig": {"strategy": "mixed"}}, "pools": [
        DOCUMENT["pools"][0],
        {"name": "h100mix", "vmSize": "Standard_ND96isr_H100_v5", "migConfig": "all-balanced"},
    ]}
    run_azure_program(program(document, outputs))
    assert outputs["gpu_resource_names"] == [
        "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]


def test_single_strategy_mig_stays_nvidia_com_gpu() -> None:
    outputs: dict[str, Any] = {}
    run_azure_program(program({**DOCUMENT, "operator": {"mig": {"strategy": "single"}}}, outputs))
    assert outputs["gpu_resource_names"] == ["nvidia.com/gpu"]


def test_without_an_azure_provider_the_error_names_the_argument() -> None:
    recording = Recording()
    with pytest.raises(ComponentArgsError, match=r"GpuCluster\('gpu'\): args\['azure_provider'\] is required"):
        run_azure_program(lambda: GpuCluster("gpu", {"config": DOCUMENT}),  # type: ignore[typeddict-item]
                          recording=recording)
    assert recording.registrations == []


def test_a_config_that_is_not_a_document_is_named() -> None:
    recording = Recording()
    with pytest.raises(ComponentArgsError, match=r"args\['config'\] must be the config document \(a mapping\), not str"):
        run_azure_program(lambda: GpuCluster("gpu", {"config": "stacks/Pulumi.prod.yaml",  # type: ignore[typeddict-item]
                                                     "azure_provider": azure_native.Provider("azure")}),
                          recording=recording)
    assert [r.type for r in recording.registrations] == ["pulumi:providers:azure-native"]
