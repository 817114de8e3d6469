"""Node Feature Discovery's CRDs move between the two charts that can run NFD, instead of being created twice.

A cluster has one NFD: the GPU operator's NFD chart, or, with the Network Operator, the network-operator chart's
bundled one (our NFD is then off). Both charts bring the same cluster-wide CRDs (`nodefeatures`,
`nodefeaturerules`, `nodefeaturegroups` in `nfd.k8s-sigs.io`). Switching from one to the other in one `pulumi up`
(adding an InfiniBand pool, or turning `network.enabled` on or off) would create the new chart's CRDs before the
engine deletes the old chart's, and the API server refuses the create ("customresourcedefinitions ... already
exists"); deleting them afterwards would also take every NodeFeature and NodeFeatureRule with them.

So each chart's NFD CRDs carry an alias naming the same CRD under the other chart: the engine sees one resource
that moved (an update of the CRD in place) rather than a create and a delete. The aliases are added by a
transform on the two components that hold the charts; URNs are built from the stack, the project, the parent the
two components share and their names, exactly as the engine builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

__all__ = ["NFD_CRD_GROUP", "NfdChartHomes", "nfd_crd_handover"]

NFD_CRD_GROUP = "nfd.k8s-sigs.io"
_CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
_CHART = "kubernetes:helm.sh/v4:Chart"
_STACK = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class NfdChartHomes:
    """Where each NFD chart lives: the type chain from the shared parent to the chart, and the chart's name."""

    operator_chain: str
    """e.g. `gpu-operator:index:GpuOperator$gpu-operator:index:NodeFeatureDiscovery`."""
    operator_chart: str
    network_chain: str
    """e.g. `gpu-operator:index:NetworkOperator`."""
    network_chart: str

    @classmethod
    def of(cls, operator: str, network: str) -> NfdChartHomes:
        """The homes for a GpuOperator named `operator` and a NetworkOperator named `network` (their components
        name the charts `<operator>-node-feature-discovery-chart` and `<network>-chart`)."""
        return cls("gpu-operator:index:GpuOperator$gpu-operator:index:NodeFeatureDiscovery",
                   f"{operator}-node-feature-discovery-chart", "gpu-operator:index:NetworkOperator", f"{network}-chart")


def _crd_urn(parent_chain: str, chain: str, chart: str, crd: str) -> str:
    types = f"{parent_chain}{chain}${_CHART}${_CRD}"
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{types}::{chart}:{crd}"


def _parent_chain(parent_urn: str | None) -> str:
    """The type chain a child of `parent_urn` starts with (empty under the stack itself)."""
    if parent_urn is None:
        return ""
    # the stack's own type never starts a child's chain (Pulumi's mocks put it there; the engine does not)
    return parent_urn.split("::")[2].removeprefix(f"{_STACK}$") + "$"


def nfd_crd_handover(homes: NfdChartHomes, to_network: bool,
                     parent: pulumi.Resource | None) -> pulumi.ResourceTransform:
    """A transform for the component holding one NFD chart (`to_network`: the NetworkOperator): each NFD CRD of
    its chart gets an alias naming the same CRD under the other chart."""
    chain, chart = ((homes.operator_chain, homes.operator_chart) if to_network
                    else (homes.network_chain, homes.network_chart))
    parent_urn: pulumi.Input[str | None] = parent.urn if parent is not None else None

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != _CRD or not args.name.endswith(f".{NFD_CRD_GROUP}") or ":" not in args.name:
            return None
        crd = args.name.split(":", 1)[1]
        alias = pulumi.Output.from_input(parent_urn).apply(
            lambda urn: _crd_urn(_parent_chain(urn), chain, chart, crd))
        opts = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(aliases=[alias]))
        return pulumi.ResourceTransformResult(args.props, opts)

    return transform
