"""The DRA stack of a config: NVIDIA's DRA driver chart, its namespace, and the claim templates to create.

:func:`render_dra` returns None when DRA is off (no pool has `gpuAllocation: dra` and `dra.enabled` is not
true). The chart's values are in :mod:`~gpu_operator.render.dra.chart`, the other objects in
:mod:`~gpu_operator.render.dra.objects`. The pool side (the `nvidia.com/dra-kubelet-plugin` and device-plugin
deploy labels) is in :mod:`gpu_operator.render.aks.node_labels`, the driver manager's eviction label in the
effective config. The objects are in the form the API server stores (:mod:`gpu_operator.render.stored`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import dra_wanted
from gpu_operator.render.dra.chart import chart_values, dra_chart, driver_root
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.dra.objects import claim_namespaces, claim_templates, device_classes, dra_namespace
from gpu_operator.render.k8s import Object
from gpu_operator.render.stored import as_stored

__all__ = [
    "RenderedDra",
    "chart_values",
    "claim_namespaces",
    "claim_templates",
    "device_classes",
    "dra_chart",
    "dra_namespace",
    "driver_root",
    "dra_objects",
    "render_dra",
]


@dataclass(frozen=True)
class RenderedDra:
    """What the DraDriver component registers, in order: namespace, chart, the claim templates' namespaces it
    creates, then the claim templates."""

    namespace: Object
    chart: HelmChart
    claim_templates: list[Object]
    claim_namespaces: list[Object] = field(default_factory=list)
    """Namespaces created for the claim templates (`dra.namespaces` entries set to `create`), before them."""


def render_dra(config: GpuStackConfig) -> RenderedDra | None:
    """The DRA stack of an (effective) config, or None when DRA is off."""
    if not dra_wanted(config.dra, config.pools):
        return None
    return RenderedDra(namespace=as_stored(dra_namespace(config)), chart=dra_chart(config),
                       claim_templates=[as_stored(obj) for obj in claim_templates(config)],
                       claim_namespaces=[as_stored(obj) for obj in claim_namespaces(config)])


def dra_objects(config: GpuStackConfig) -> list[Object]:
    """The manifests beside the chart (its namespace, the claim templates); [] when DRA is off."""
    rendered = render_dra(config)
    if rendered is None:
        return []
    return [rendered.namespace, *rendered.claim_namespaces, *rendered.claim_templates]
