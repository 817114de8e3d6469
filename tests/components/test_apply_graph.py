"""`render --graph` draws what the components register: each edge of the apply graph is a dependency the
components give the engine, and each such dependency between the graph's steps is an edge.

The components run under the recording mocks as the stack program runs them (`install_cluster_software`); each
registration is mapped to its graph step (an operand component, a chart, a network or DRA object, the monitoring
objects), and a dependency on a component is a dependency on every step it holds, as the engine waits for a
component's children (the SDK sends such a dependency as one on each resource below the component).
"""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as k8s
import pytest

from gpu_operator.components.cluster_software import SoftwareNames, install_cluster_software
from gpu_operator.config import parse_config
from gpu_operator.render.apply_graph import apply_graph
from tests.support.pulumi_mocks import Recording, Registration, run_program

NAMES = SoftwareNames(network="gpu-network", operator="gpu", dra="gpu-dra", monitoring="gpu-monitoring")
AKS = {"resourceGroup": "rg-gpu", "clusterName": "aks-gpu", "kubernetesVersion": "1.34"}
IB_POOL = {"name": "h100", "vmSize": "Standard_ND96isr_H100_v5", "count": 2}
DOCUMENTS: dict[str, dict[str, Any]] = {
    "plain": {"cluster": {"prometheusOperator": True}},
    "infiniband, IPoIB and MOFED wait": {
        "aks": AKS, "pools": [IB_POOL],
        "network": {"waitForMofed": True, "ipoib": {"ipPool": {"subnet": "192.168.0.0/16"}}},
    },
    "dra": {"aks": {**AKS, "kubernetesVersion": "1.34.2"}, "pools": [{**IB_POOL, "gpuAllocation": "dra"}],
            "network": {"enabled": False}},
}


def _record(document: dict[str, Any], wait: bool) -> Recording:
    config = parse_config(document)

    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="kubeconfig")
        install_cluster_software(config, provider, "kubeconfig", NAMES, wait_for_daemonsets=wait)

    return run_program(program)


def _steps(recording: Recording) -> dict[str, str]:
    """URN → graph step id, for the registrations the graph draws."""
    by_urn = recording.by_urn()
    steps: dict[str, str] = {}
    network_objects = 0
    for reg in recording.registrations:
        parent = by_urn.get(reg.parent)
        if reg.type == "gpu-operator:index:GpuOperand":
            steps[reg.urn] = f"operand-{reg.name.removeprefix(NAMES.operator + '-')}"
        elif reg.type == "gpu-operator:index:NodeFeatureDiscovery":
            steps[reg.urn] = "nfd-chart"
        elif parent is not None and parent.type == "gpu-operator:index:NetworkOperator":
            steps[reg.urn] = _network_step(reg, network_objects)
            network_objects += reg.type.startswith("kubernetes:") and "ipoib" in steps[reg.urn]
        elif parent is not None and parent.type == "gpu-operator:index:DraDriver":
            steps[reg.urn] = _dra_step(reg, recording)
        elif parent is not None and parent.type == "gpu-operator:index:GpuMonitoring":
            steps[reg.urn] = "monitoring"
    return steps


def _network_step(reg: Registration, ipoib_seen: int) -> str:
    kinds = {"kubernetes:core/v1:Namespace": "network-namespace", "kubernetes:helm.sh/v4:Chart": "network-chart",
             "kubernetes:nfd.k8s-sigs.io/v1alpha1:NodeFeatureRule": "network-rule",
             "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy": "network-policy"}
    if reg.type in kinds:
        return kinds[reg.type]
    if "mofed" in reg.name:
        return "network-mofed"
    if "ippool-crd" in reg.name:
        return "network-ippool-crd"
    return f"network-ipoib-{ipoib_seen}"


def _dra_step(reg: Registration, recording: Recording) -> str:
    if reg.type == "kubernetes:helm.sh/v4:Chart":
        return "dra-chart"
    templates = [r.urn for r in recording.registrations if r.type.endswith("ResourceClaimTemplate")]
    if reg.urn in templates:
        return f"dra-claim-{templates.index(reg.urn)}"
    return "dra-namespace"


def _recorded_edges(recording: Recording) -> set[tuple[str, str]]:
    steps = _steps(recording)
    by_urn = recording.by_urn()

    def held(urn: str) -> set[str]:
        """The step a dependency on `urn` waits for: the step of the registration or of its nearest parent that
        is one (the SDK sends a dependency on a component as one on each resource below it)."""
        while urn and urn not in steps:
            urn = by_urn[urn].parent if urn in by_urn else ""
        return {steps[urn]} if urn else set()

    edges: set[tuple[str, str]] = set()
    for urn, step in steps.items():
        for dependency in by_urn[urn].dependencies:
            edges |= {(before, step) for before in held(dependency) if before != step}
    return edges


@pytest.mark.parametrize("wait", [False, True], ids=["side by side", "waitForDaemonsets"])
@pytest.mark.parametrize("case", list(DOCUMENTS))
def test_the_graph_is_the_dependencies_the_components_register(case: str, wait: bool) -> None:
    document = DOCUMENTS[case]
    recording = _record(document, wait)
    graph = apply_graph(parse_config(document), wait_for_daemonsets=wait)
    # the pools are GpuCluster's, before the provider the software is installed with (test_cluster.py checks them)
    pools = set(graph.of("GpuNodePool"))
    assert set(_steps(recording).values()) == {step.id for step in graph.steps} - pools
    assert _recorded_edges(recording) == {edge for edge in graph.edges if not pools & set(edge)}
