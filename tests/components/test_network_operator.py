"""NetworkOperator under Pulumi mocks: the tree, the chart reference, and the order that removes the races."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import GpuOperator, NetworkOperator
from gpu_operator.config import ConfigError
from tests.support.pulumi_mocks import Recording, SlowMocks, run_program

TOKEN = "gpu-operator:index:NetworkOperator"
CHART = "kubernetes:helm.sh/v4:Chart"
CUSTOM = "kubernetes:nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule"
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
DOCUMENT: dict[str, Any] = {
    "aks": AKS,
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}],
    "network": {"devicePlugins": ["sriov", "shared"], "ipoib": {"ipPool": {"subnet": "192.168.0.0/16"}}},
}


def _program(document: dict[str, Any], *, with_gpu_operator: bool = False):
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        network = NetworkOperator("net", {"provider": provider, "config": document})
        if with_gpu_operator:
            GpuOperator("gpu", {"provider": provider, "config": document}, pulumi.ResourceOptions(depends_on=[network]))
    return program


@pytest.fixture(scope="module")
def recording() -> Recording:
    return run_program(_program(DOCUMENT, with_gpu_operator=True))


def _kind(recording: Recording, kind: str) -> Any:
    [registration] = [r for r in recording.of_type("kubernetes:") if r.type.endswith(f":{kind}")
                      and r.name.startswith("net-")]
    return registration


def test_tree(recording: Recording) -> None:
    [component] = recording.of_type(TOKEN)
    children = [r for r in recording.registrations if r.parent == component.urn]
    kinds = sorted(r.type.rsplit(":", 1)[-1] for r in children)
    assert kinds == ["Chart", "IPPool", "IPoIBNetwork", "Namespace", "NicClusterPolicy", "NodeFeatureRule"]
    assert all(r.provider.startswith(recording.of_type("pulumi:providers:kubernetes")[0].urn) for r in children)


def test_the_chart_is_nvidias_pinned_release(recording: Recording) -> None:
    chart = _kind(recording, "Chart")
    assert chart.inputs["chart"] == "network-operator"
    assert chart.inputs["version"] == "26.4.1"
    assert chart.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    assert chart.inputs["namespace"] == "network-operator"
    assert chart.inputs["values"]["nfd"] == {"enabled": True, "deployNodeFeatureRules": False}


def test_namespace_chart_rule_policy_pool_network_in_order(recording: Recording) -> None:
    order = ["Namespace", "Chart", "NodeFeatureRule", "NicClusterPolicy", "IPPool", "IPoIBNetwork"]
    registrations = [_kind(recording, kind) for kind in order]
    for before, after in zip(registrations, registrations[1:]):
        assert before.urn in after.dependencies, f"{after.type} does not wait for {before.type}"


def test_the_gpu_operator_runs_no_nfd_of_its_own(recording: Recording) -> None:
    assert not recording.of_type("gpu-operator:index:NodeFeatureDiscovery")
    [chart] = [r for r in recording.of_type(CHART)]
    assert chart.name == "net-chart"


def test_no_gpu_operator_object_is_sent_before_the_policy_exists() -> None:
    mocks = SlowMocks({"kubernetes:mellanox.com": 0.2})
    recording = run_program(_program(DOCUMENT, with_gpu_operator=True), mocks=mocks)
    policy = _kind(recording, "NicClusterPolicy")
    gpu_objects = [r for r in recording.of_type("kubernetes:") if r.name.startswith("gpu-")]
    assert gpu_objects
    created = recording.position("resolved", policy.name)
    assert min(recording.position("register", r.name) for r in gpu_objects) > created


def test_a_slow_chart_still_comes_before_the_policy() -> None:
    recording = run_program(_program(DOCUMENT), mocks=SlowMocks({CHART: 0.2}))
    chart, policy = _kind(recording, "Chart"), _kind(recording, "NicClusterPolicy")
    assert recording.position("register", policy.name) > recording.position("resolved", chart.name)


def test_rdma_resource_names_output() -> None:
    seen: dict[str, Any] = {}

    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        NetworkOperator("net", {"provider": provider, "config": DOCUMENT}).rdma_resource_names.apply(
            lambda names: seen.update(names=names))
    run_program(program)
    assert seen["names"] == ["rdma/ib", "rdma/shared_ib"]


def test_without_infiniband_nothing_is_registered() -> None:
    recording = Recording()
    document = {"aks": AKS, "pools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3"}]}
    with pytest.raises(ConfigError, match="network.enabled"):
        run_program(_program(document), recording=recording)
    assert not recording.of_type(TOKEN)


def test_waiting_for_mofed_is_a_readiness_resource_after_the_policy() -> None:
    def program(document: dict[str, Any]):
        def run() -> None:
            provider = k8s.Provider("cluster", kubeconfig="{}")
            network = NetworkOperator("net", {"provider": provider, "config": document, "kubeconfig": "kubeconfig: 1"})
            GpuOperator("gpu", {"provider": provider, "config": document}, pulumi.ResourceOptions(depends_on=[network]))
        return run

    waiting = {**DOCUMENT, "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 3},
                                     {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "count": 5}],
               "network": {**DOCUMENT["network"], "waitForMofed": True, "mofedTimeoutSeconds": 1200}}
    recording = run_program(program(waiting), mocks=SlowMocks({"pulumi-python:dynamic:Resource": 0.3}))
    [readiness] = [r for r in recording.of_type("pulumi-python:dynamic:Resource")]
    assert readiness.name == "net-mofed-ready"
    assert readiness.inputs["expectedNodes"] == 3  # the IB pool's nodes only
    assert readiness.inputs["pools"] == ["h100"]
    assert readiness.inputs["timeoutSeconds"] == 1200
    policy = _kind(recording, "NicClusterPolicy")
    assert policy.urn in readiness.dependencies
    assert "annotations" not in policy.inputs["metadata"]
    # The GPU operator's objects are asked for only once MOFED readiness resolved (even when it is slow).
    gpu_objects = [r for r in recording.of_type("kubernetes:") if r.name.startswith("gpu-")]
    assert gpu_objects
    ready_at = recording.position("resolved", "net-mofed-ready")
    assert all(recording.position("register", r.name) > ready_at for r in gpu_objects)
    recording = run_program(_program(DOCUMENT))
    assert not recording.of_type("pulumi-python:dynamic:Resource")


def test_waiting_for_mofed_without_a_kubeconfig_names_the_argument() -> None:
    recording = Recording()
    waiting = {**DOCUMENT, "network": {**DOCUMENT["network"], "waitForMofed": True}}
    with pytest.raises(ConfigError, match=r"network.waitForMofed.*args\['kubeconfig'\]"):
        run_program(_program(waiting), recording=recording)
    assert not recording.of_type(TOKEN)
