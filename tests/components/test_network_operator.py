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
    [readiness] = [r for r in recording.of_type("pulumi-python:dynamic:Resource") if r.name.endswith("-mofed-ready")]
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
    assert not [r for r in recording.of_type("pulumi-python:dynamic:Resource") if r.name.endswith("-mofed-ready")]


def test_waiting_for_mofed_without_a_kubeconfig_names_the_argument() -> None:
    recording = Recording()
    waiting = {**DOCUMENT, "network": {**DOCUMENT["network"], "waitForMofed": True}}
    with pytest.raises(ConfigError, match=r"network.waitForMofed.*args\['kubeconfig'\]"):
        run_program(_program(waiting), recording=recording)
    assert not recording.of_type(TOKEN)


@pytest.mark.parametrize("parallel", [0, 3])
def test_the_users_max_parallel_upgrades_reaches_the_registered_policy(parallel: int) -> None:
    """Mellanox/network-operator v26.4.1 api/v1alpha1/nicclusterpolicy_types.go `DriverUpgradePolicySpec`:
    `maxParallelUpgrades` 0 means no limit (the CRD defaults only an absent field to 1), so 0 and N must reach the
    NicClusterPolicy Pulumi registers as written, never the default 1."""
    network = {**DOCUMENT["network"], "ofedDriver": {"upgradePolicy": {"maxParallelUpgrades": parallel}}}
    recording = run_program(_program({**DOCUMENT, "network": network}))
    policy = _kind(recording, "NicClusterPolicy")
    assert policy.inputs["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"] == parallel


# -- waitForMofed after a MOFED version change ---------------------------------------------------------------------

from gpu_operator.components.mofed_readiness import MofedReadinessProvider  # noqa: E402
from gpu_operator.readiness import IB_NODE_LABEL, MOFED_WAIT_LABEL  # noqa: E402

OLD = {"repository": "nvcr.io/nvidia/mellanox", "image": "doca-driver", "version": "doca3.4.0-26.04-0.8.6.0-0"}
NEW = {**OLD, "version": "doca3.4.1-26.04-1.1.0.0-1"}


def _props(image: dict[str, str], **more: Any) -> dict[str, Any]:
    return {"kubeconfig": "kubeconfig: 1", "pools": ["h100"], "expectedNodes": 2, "policyDigest": "same",
            "timeoutSeconds": 1, "pollSeconds": 0.05, "mofedImage": image, "namespace": "network-operator", **more}


def test_a_mofed_version_change_is_a_change_of_the_readiness_resource() -> None:
    """The driver DaemonSets update OnDelete (Mellanox/network-operator v26.4.1
    manifests/state-ofed-driver/0050_ofed-driver-ds.yaml): a new version is a wait of its own, whatever else of
    the policy's digest stayed."""
    provider = MofedReadinessProvider()
    assert provider.diff("id", _props(OLD), _props(NEW)).changes
    assert not provider.diff("id", _props(NEW), _props(NEW)).changes


def test_the_readiness_resource_is_given_the_driver_the_policy_asks_for() -> None:
    def program(document: dict[str, Any]):
        def run() -> None:
            provider = k8s.Provider("cluster", kubeconfig="{}")
            NetworkOperator("net", {"provider": provider, "config": document, "kubeconfig": "kubeconfig: 1"})
        return run

    def readiness_of(document: dict[str, Any]) -> Any:
        [found] = [r for r in run_program(program(document)).of_type("pulumi-python:dynamic:Resource")
                   if r.name.endswith("-mofed-ready")]
        return found

    network = {**DOCUMENT["network"], "waitForMofed": True, "ofedDriver": {"image": NEW}}
    readiness = readiness_of({**DOCUMENT, "network": network})
    assert readiness.inputs["mofedImage"] == NEW
    assert readiness.inputs["namespace"] == "network-operator"
    host = {**DOCUMENT["network"], "waitForMofed": True, "mofed": "host"}
    readiness = readiness_of({**DOCUMENT, "network": host})
    assert readiness.inputs.get("mofedImage") is None


class _FakeCluster(MofedReadinessProvider):
    """The provider with the cluster's nodes (every IB node labelled mofed.wait=false) and driver pods given."""

    def __init__(self, pods: list[tuple[str, str, bool]]) -> None:
        self.pods = pods

    def _listers(self, props: dict[str, Any]) -> tuple[Any, Any]:
        nodes = [(name, {IB_NODE_LABEL: "true", MOFED_WAIT_LABEL: "false"}) for name in ("n1", "n2")]
        return (lambda: nodes), (lambda: self.pods)


def test_the_update_after_a_version_change_waits_for_the_new_driver_on_every_node() -> None:
    old, new = (f"{OLD['repository']}/doca-driver:{OLD['version']}-ubuntu22.04-amd64",
                f"{NEW['repository']}/doca-driver:{NEW['version']}-ubuntu22.04-amd64")
    provider = _FakeCluster([("n1", new, True), ("n2", old, True)])
    with pytest.raises(RuntimeError, match=r"network.waitForMofed: .*still on the previous MOFED: n2"):
        provider.update("id", _props(OLD), _props(NEW))
    provider.pods = [("n1", new, True), ("n2", new, True)]
    assert provider.update("id", _props(OLD), _props(NEW)).outs["readyNodes"] == ["n1", "n2"]


# -- the IPPool after its CRD, which the Network Operator creates at runtime -------------------------------------


def test_the_ip_pool_waits_for_its_crd_to_be_established() -> None:
    """Mellanox/network-operator v26.4.1: the chart's crds/ hold no nv-ipam CRD; pkg/state/state_nv_ipam_cni.go
    `Sync` applies it when the operator reconciles the NicClusterPolicy. The IPPool is sent only after a
    CrdEstablished child, itself after the policy, has seen `ippools.nv-ipam.nvidia.com` Established."""
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        NetworkOperator("net", {"provider": provider, "config": DOCUMENT, "kubeconfig": "kubeconfig: 1"})

    recording = run_program(program, mocks=SlowMocks({"pulumi-python:dynamic:Resource": 0.3}))
    [crd] = recording.of_type("pulumi-python:dynamic:Resource")
    assert crd.name == "net-ippool-crd" and crd.inputs["crd"] == "ippools.nv-ipam.nvidia.com"
    policy, pool = _kind(recording, "NicClusterPolicy"), _kind(recording, "IPPool")
    assert policy.urn in crd.dependencies
    assert crd.urn in pool.dependencies
    assert recording.position("register", pool.name) > recording.position("resolved", crd.name)


def test_the_crd_wait_provider_waits_again_only_for_another_crd() -> None:
    from gpu_operator.components.crd_readiness import CrdEstablishedProvider

    provider = CrdEstablishedProvider()
    props = {"kubeconfig": "x", "crd": "ippools.nv-ipam.nvidia.com", "timeoutSeconds": 600}
    assert not provider.diff("id", props, {**props, "kubeconfig": "rotated"}).changes
    assert provider.diff("id", props, {**props, "crd": "cidrpools.nv-ipam.nvidia.com"}).changes
