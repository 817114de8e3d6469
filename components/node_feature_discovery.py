"""`NodeFeatureDiscovery`: the NFD Helm chart, installed the way NVIDIA's chart installs its subchart.

It is a `helm.v4.Chart`, so every NFD object is its own Pulumi resource (previewable, visible to policies). The
values come from :func:`gpu_operator.render.nfd.nfd_chart`: PCI labels by vendor, the `nvidia.com` label
namespace, and worker tolerations matching the GPU operands'.
"""

from __future__ import annotations

from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.component_args import required
from gpu_operator.components.kubernetes_objects import register_chart
from gpu_operator.render.helm_chart import HelmChart

__all__ = ["NodeFeatureDiscovery", "NodeFeatureDiscoveryArgs", "TOKEN"]

TOKEN = "gpu-operator:index:NodeFeatureDiscovery"


class NodeFeatureDiscoveryArgs(TypedDict):
    """Inputs of a NodeFeatureDiscovery."""

    chart: HelmChart
    """Chart reference, version, namespace and values."""
    provider: k8s.Provider
    """The Kubernetes provider of the target cluster."""


class NodeFeatureDiscovery(pulumi.ComponentResource):
    """Node Feature Discovery (master, worker, garbage collector and its CRDs) from its official chart."""

    chart: k8s.helm.v4.Chart

    def __init__(
        self, name: str, args: NodeFeatureDiscoveryArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        provider = required(args, "provider", k8s.Provider, f"NodeFeatureDiscovery({name!r})",
                            "a pulumi_kubernetes.Provider for the target cluster")
        super().__init__(TOKEN, name, {}, opts)
        spec = args["chart"]
        self.chart = register_chart(name, spec, pulumi.ResourceOptions(
            parent=self, provider=provider, deleted_with=opts.deleted_with if opts is not None else None))
        self.register_outputs({"version": spec.version})
