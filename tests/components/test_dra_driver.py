"""DraDriver under Pulumi mocks: the tree, the pinned chart and its values, the order, and GpuCluster's wiring."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import DraDriver, GpuOperator
from gpu_operator.config import ConfigError
from tests.support.pulumi_mocks import Recording, SlowMocks, run_program

TOKEN = "gpu-operator:index:DraDriver"
CHART = "kubernetes:helm.sh/v4:Chart"
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
TEMPLATE = {
    "name": "one-h100",
    "namespace": "ml",
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com",
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.lowerAscii()"
                                             ".contains('h100')"}}]}}]}},
}
DOCUMENT: dict[str, Any] = {
    "aks": AKS,
    "operator": {"driver": {"version": "580.95.05"}},
    "pools": [{"name": "h100dra", "vmSize": "Standard_ND96isr_H100_v5", "gpuAllocation": "dra"},
              {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "taints": ["team=ml:NoSchedule"]}],
    "dra": {"namespaces": {"ml": "existing"}, "claimTemplates": [TEMPLATE]},
}


def _program(document: dict[str, Any], *, with_gpu_operator: bool = False):
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        after: list[pulumi.Resource] = []
        if with_gpu_operator:
            after.append(GpuOperator("gpu", {"provider": provider, "config": document}))
        DraDriver("dra", {"provider": provider, "config": document}, pulumi.ResourceOptions(depends_on=after or None))
    return program


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_program(_program(DOCUMENT))


def _kind(recording: Recording, kind: str) -> Any:
    [registration] = [r for r in recording.of_type("kubernetes:") if r.type.endswith(f":{kind}")
                      and r.name.startswith("dra-")]
    return registration


def test_tree(recording: Recording) -> None:
    [component] = recording.of_type(TOKEN)
    children = [r for r in recording.registrations if r.parent == component.urn]
    assert sorted(r.type for r in children) == sorted([
        CHART, "kubernetes:core/v1:Namespace", "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"])
    assert all(r.provider.startswith(recording.of_type("pulumi:providers:kubernetes")[0].urn) for r in children)


def test_the_chart_is_the_pinned_release_with_the_stacks_values(recording: Recording) -> None:
    chart = _kind(recording, "Chart")
    assert chart.inputs["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert chart.inputs["version"] == "0.4.1"
    assert chart.inputs["namespace"] == "dra-driver-nvidia-gpu"
    values = chart.inputs["values"]
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}}
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    tolerations = values["kubeletPlugin"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in tolerations


def test_namespace_then_chart_then_claim_templates(recording: Recording) -> None:
    order = [_kind(recording, kind) for kind in ("Namespace", "Chart", "ResourceClaimTemplate")]
    for before, after in zip(order, order[1:]):
        assert before.urn in after.dependencies, f"{after.type} does not wait for {before.type}"
    template = order[-1]
    assert template.inputs["metadata"]["namespace"] == "ml"
    assert template.inputs["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_a_namespace_to_create_comes_before_its_claim_templates() -> None:
    """`dra.namespaces: {ml: create}`: the stack creates `ml` (no PSA labels: workloads run there), and each claim
    template in it waits for it, so the API server never answers `namespaces "ml" not found` mid-update."""
    recording = run_program(_program({**DOCUMENT, "dra": {"namespaces": {"ml": "create"},
                                                          "claimTemplates": [TEMPLATE]}}))
    namespaces = {r.inputs["metadata"]["name"]: r for r in recording.of_type("kubernetes:core/v1:Namespace")}
    assert set(namespaces) == {"dra-driver-nvidia-gpu", "ml"}
    assert not any(label.startswith("pod-security") for label in namespaces["ml"].inputs["metadata"]["labels"])
    template = _kind(recording, "ResourceClaimTemplate")
    assert namespaces["ml"].urn in template.dependencies


@pytest.mark.parametrize(("namespaces", "expected"), [
    ({}, "dra.claimTemplates[0].namespace: namespace 'ml' is not one the stack creates"),
    ({"ml": "elsewhere"}, "dra.namespaces.ml"),
    ({"ml": "existing", "kube-system": "create"}, "dra.namespaces.kube-system: 'kube-system' is a namespace of the "
                                                   "cluster itself"),
])
def test_an_undeclared_claim_namespace_registers_nothing(namespaces: dict[str, str], expected: str) -> None:
    recording = Recording()
    document = {**DOCUMENT, "dra": {"namespaces": namespaces, "claimTemplates": [TEMPLATE]}}
    with pytest.raises(ConfigError) as raised:
        run_program(_program(document), recording=recording)
    assert expected in str(raised.value)
    assert not recording.of_type("kubernetes:")


def test_a_slow_chart_still_comes_before_the_claim_templates() -> None:
    recording = run_program(_program(DOCUMENT), mocks=SlowMocks({CHART: 0.2}))
    chart, template = _kind(recording, "Chart"), _kind(recording, "ResourceClaimTemplate")
    assert recording.position("register", template.name) > recording.position("resolved", chart.name)


def test_the_chart_waits_for_the_operator_it_is_given() -> None:
    recording = run_program(_program(DOCUMENT, with_gpu_operator=True), mocks=SlowMocks({"kubernetes:apps": 0.05}))
    operator_objects = [r for r in recording.of_type("kubernetes:") if r.name.startswith("gpu-")]
    assert operator_objects
    chart = _kind(recording, "Chart")
    assert recording.position("register", chart.name) > max(
        recording.position("resolved", r.name) for r in operator_objects)


def test_without_dra_pools_nothing_is_registered() -> None:
    recording = Recording()
    document = {"aks": AKS, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}]}
    with pytest.raises(ConfigError, match="dra.enabled"):
        run_program(_program(document), recording=recording)
    assert not recording.of_type(TOKEN)


def test_a_bad_selector_registers_nothing() -> None:
    recording = Recording()
    bad = {**TEMPLATE, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com",
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].minor == 0"}}]}}]}}}
    with pytest.raises(ConfigError, match="removed in driver v25.8"):
        run_program(_program({**DOCUMENT, "dra": {"namespaces": {"ml": "existing"}, "claimTemplates": [bad]}}),
                    recording=recording)
    assert not recording.of_type("kubernetes:")


def test_gpu_cluster_deploys_the_driver_after_the_operator_and_labels_the_dra_pool() -> None:
    import pulumi_azure_native as azure_native

    from gpu_operator.components import GpuCluster
    from gpu_operator.components.feature_registration import FeatureWait
    from tests.support.azure_mocks import run_azure_program

    document = {**DOCUMENT, "aks": {**AKS, "create": True, "location": "westeurope"},
                "cluster": {"prometheusOperator": False}}

    def program() -> None:
        GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure"),
                           "feature_wait": FeatureWait(timeout_seconds=60, interval_seconds=0)})

    recording = run_azure_program(program)
    [cluster] = recording.of_type("gpu-operator:index:GpuCluster")
    [driver] = recording.of_type(TOKEN)
    [operator] = recording.of_type("gpu-operator:index:GpuOperator")
    assert driver.parent == cluster.urn
    # a component's dependency is recorded as its resources: the operator's DaemonSets
    assert operator.urn in driver.dependencies or any(":apps/v1:DaemonSet::gpu-operator" in urn
                                                       for urn in driver.dependencies)
    pools = {r.inputs["nodeLabels"].get("nvidia.com/dra-kubelet-plugin"): r.inputs["nodeLabels"]
             for r in recording.of_type("azure-native:containerservice:AgentPool")}
    assert set(pools) == {"true", None}
    assert pools["true"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert pools[None]["nvidia.com/gpu.deploy.device-plugin"] == "true"


def test_gpu_cluster_without_dra_has_no_driver() -> None:
    import pulumi_azure_native as azure_native

    from gpu_operator.components import GpuCluster
    from gpu_operator.components.feature_registration import FeatureWait
    from tests.support.azure_mocks import run_azure_program

    document = {"aks": AKS, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}]}

    def program() -> None:
        GpuCluster("gpu", {"config": document, "azure_provider": azure_native.Provider("azure"),
                           "feature_wait": FeatureWait(timeout_seconds=60, interval_seconds=0)})

    assert not run_azure_program(program).of_type(TOKEN)
