"""NFD's CRDs move between the GPU operator's NFD chart and the network-operator chart's bundled NFD.

Without the aliases, switching in one update makes the engine create the new chart's CRDs while the old chart's
still exist, and the API server refuses ("customresourcedefinitions.apiextensions.k8s.io
\\"nodefeatures.nfd.k8s-sigs.io\\" already exists", seen under the real engine in tests/e2e/test_engine_stack.py).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from gpu_operator.components.nfd_handover import NfdChartHomes, nfd_crd_handover
from tests.support.pulumi_mocks import run_program

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
HOMES = NfdChartHomes.of("gpu", "gpu-network")
STACK_URN = "urn:pulumi:test::gpu-operator::"


def _aliases(to_network: bool, type_: str, name: str, parent: str | None = None) -> list[str] | None:
    found: list[Any] = []

    def program() -> Any:
        owner = pulumi.ComponentResource("gpu-operator:index:GpuCluster", "gpu") if parent else None
        result = nfd_crd_handover(HOMES, to_network, owner)(
            pulumi.ResourceTransformArgs(True, type_, name, {}, pulumi.ResourceOptions()))
        if result is None:
            found.append(None)
            return None
        return pulumi.Output.all(*result.opts.aliases).apply(found.append)

    run_program(program)
    return found[0]


@pytest.mark.parametrize("to_network, name, expected", [
    (True, "gpu-network-chart:nodefeatures.nfd.k8s-sigs.io",
     "gpu-operator:index:GpuOperator$gpu-operator:index:NodeFeatureDiscovery$kubernetes:helm.sh/v4:Chart$" + CRD
     + "::gpu-node-feature-discovery-chart:nodefeatures.nfd.k8s-sigs.io"),
    (False, "gpu-node-feature-discovery-chart:nodefeaturerules.nfd.k8s-sigs.io",
     "gpu-operator:index:NetworkOperator$kubernetes:helm.sh/v4:Chart$" + CRD
     + "::gpu-network-chart:nodefeaturerules.nfd.k8s-sigs.io"),
])
def test_each_nfd_crd_is_aliased_to_the_same_crd_under_the_other_chart(to_network: bool, name: str,
                                                                        expected: str) -> None:
    assert _aliases(to_network, CRD, name) == [STACK_URN + expected]


def test_under_a_gpu_cluster_the_aliases_keep_its_type_chain() -> None:
    [alias] = _aliases(True, CRD, "gpu-network-chart:nodefeatures.nfd.k8s-sigs.io", parent="gpu") or []
    assert alias.startswith(STACK_URN + "gpu-operator:index:GpuCluster$gpu-operator:index:GpuOperator$")


@pytest.mark.parametrize("type_, name", [
    (CRD, "gpu-network-chart:nicclusterpolicies.mellanox.com"),  # the network operator's own CRDs stay its own
    ("kubernetes:apps/v1:DaemonSet", "gpu-network-chart:network-operator/nfd-worker"),
])
def test_nothing_else_is_aliased(type_: str, name: str) -> None:
    assert _aliases(True, type_, name) is None
