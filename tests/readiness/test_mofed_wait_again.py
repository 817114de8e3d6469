"""`network.waitForMofed` waits again when only the NicClusterPolicy changes, and only then.

The Network Operator reconciles MOFED from the NicClusterPolicy: a change of its `ofedDriver` (environment, probes,
upgrade policy), of a device plugin's config or of the IPoIB network restarts or reschedules what the readiness
waits for, while the driver image it asks for may stay the same. The readiness resource is given a digest of the
policy's spec (`policyDigest`), and its provider's diff (components/mofed_readiness.py `_WAIT_AGAIN_ON`) turns a
changed digest into an update, which waits (`MofedReadinessProvider.update`). A rotated kubeconfig, or a change
outside the policy, is no reason to wait.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components import NetworkOperator
from gpu_operator.components.mofed_readiness import MofedReadinessProvider
from tests.support.pulumi_mocks import run_program

AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
DOCUMENT: dict[str, Any] = {
    "aks": AKS,
    "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}],
    "network": {"waitForMofed": True, "devicePlugins": ["sriov", "shared"]},
}


def readiness_inputs(document: dict[str, Any], kubeconfig: str = "kubeconfig: 1") -> dict[str, Any]:
    """The inputs the NetworkOperator gives its MOFED readiness resource for `document`."""
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        NetworkOperator("net", {"provider": provider, "config": document, "kubeconfig": kubeconfig})

    [readiness] = [r for r in run_program(program).of_type("pulumi-python:dynamic:Resource")
                   if r.name.endswith("-mofed-ready")]
    return dict(readiness.inputs)


def changed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    node = document
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return document


@pytest.mark.parametrize(("path", "value"), [
    (("network", "ofedDriver", "env"), [{"name": "UNLOAD_STORAGE_MODULES", "value": "true"}]),
    (("network", "ofedDriver", "upgradePolicy"), {"maxParallelUpgrades": 2}),
    (("network", "rdmaSharedDevicePlugin", "rdmaHcaMax"), 32),
    (("network", "ipoib"), {"ipPool": {"subnet": "192.168.0.0/16"}}),
])
def test_a_change_of_the_policy_alone_waits_again(path: tuple[str, ...], value: Any) -> None:
    before, after = readiness_inputs(DOCUMENT), readiness_inputs(changed(path, value))
    assert before["mofedImage"] == after["mofedImage"]  # the driver it asks for is the same
    assert before["policyDigest"] != after["policyDigest"]
    assert MofedReadinessProvider().diff("id", before, after).changes


def test_the_same_policy_with_a_rotated_kubeconfig_does_not_wait_again() -> None:
    before, after = readiness_inputs(DOCUMENT), readiness_inputs(DOCUMENT, kubeconfig="kubeconfig: rotated")
    assert before["policyDigest"] == after["policyDigest"]
    assert not MofedReadinessProvider().diff("id", before, after).changes


def test_a_change_outside_the_policy_does_not_wait_again() -> None:
    """The GPU operator's own settings (here its driver version) do not touch the NicClusterPolicy."""
    before = readiness_inputs(DOCUMENT)
    after = readiness_inputs(changed(("operator", "driver", "version"), "580.95.05"))
    assert not MofedReadinessProvider().diff("id", before, after).changes


def test_an_update_after_a_policy_change_waits_for_every_node() -> None:
    """The update the diff asks for runs the wait itself: a node still waiting fails it, naming the node."""
    from gpu_operator.readiness import IB_NODE_LABEL, MOFED_WAIT_LABEL

    class Cluster(MofedReadinessProvider):
        labels = {"n1": "false", "n2": "true"}

        def _listers(self, props: dict[str, Any]) -> tuple[Any, Any]:
            nodes = [(name, {IB_NODE_LABEL: "true", MOFED_WAIT_LABEL: wait}) for name, wait in self.labels.items()]
            return (lambda: nodes), (lambda: [])

    before = readiness_inputs(DOCUMENT)
    after = {**readiness_inputs(changed(("network", "rdmaSharedDevicePlugin", "rdmaHcaMax"), 32)),
             "kubeconfig": "kubeconfig: 1", "timeoutSeconds": 0, "pollSeconds": 0}
    cluster = Cluster()
    with pytest.raises(RuntimeError, match="waiting: n2"):
        cluster.update("id", before, after)
    cluster.labels = {"n1": "false", "n2": "false"}
    assert cluster.update("id", before, after).outs["readyNodes"] == ["n1", "n2"]
