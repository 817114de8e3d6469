"""Every image and Helm chart a config makes the cluster pull: what to copy into a mirror.

Images come from the stack's rendered objects (each container and init container of a pod template, and the
component images a NicClusterPolicy names as `repository`/`image`/`version`) and from the Helm charts installed
beside them (their own images, as their values compose them: :mod:`gpu_operator.facts.chart_images`). Each is listed
once, with every object that pulls it; the charts with the source Helm fetches them from. This is what
`gpu-operator images` prints, and what a `registry` mirror serves (:mod:`gpu_operator.config.mirror`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.facts.chart_images import CHART_IMAGES
from gpu_operator.render.dra import render_dra
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.network import render_network
from gpu_operator.render.nfd import nfd_chart
from gpu_operator.render.registry import render_operands
from gpu_operator.render.stack import stack_objects

__all__ = ["PulledChart", "PulledImage", "pairs", "pulled_charts", "pulled_images"]


@dataclass(frozen=True)
class PulledImage:
    """An image, and what pulls it (`DaemonSet gpu-operator/nvidia-driver-daemonset`, `Helm chart ...`)."""

    reference: str
    pulled_by: tuple[str, ...]


@dataclass(frozen=True)
class PulledChart:
    """A Helm chart: its name, version, where Helm fetches it, and the component that installs it."""

    name: str
    version: str
    origin: str
    installed_by: str


def _charts(config: GpuStackConfig) -> list[tuple[HelmChart, str]]:
    network, dra = render_network(config), render_dra(config)
    nfd = nfd_chart(config)
    return [(chart, installer) for chart, installer in ((network.chart if network else None, "NetworkOperator"),
                                                       (dra.chart if dra else None, "DraDriver"),
                                                       (nfd, "GpuOperator")) if chart is not None]


def _object_images(obj: Mapping[str, Any]) -> Iterator[str]:
    """The images an object names: containers' `image`, and a NicClusterPolicy's `repository/image:version`."""
    stack: list[Any] = [obj.get("spec", {})]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key in ("initContainers", "containers"):
                yield from (c["image"] for c in node.get(key) or () if isinstance(c, Mapping) and "image" in c)
            if all(isinstance(node.get(key), str) for key in ("repository", "image", "version")):
                yield f"{node['repository']}/{node['image']}:{node['version']}"
            stack += list(node.values())[::-1]
        elif isinstance(node, list):
            stack += node[::-1]


def _where(obj: Mapping[str, Any]) -> str:
    metadata = obj["metadata"]
    namespace = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{obj['kind']} {namespace}{metadata['name']}"


def pulled_images(config: GpuStackConfig) -> list[PulledImage]:
    """Every image, in the order the stack first pulls it, each with what pulls it."""
    found: dict[str, list[str]] = {}
    for obj in stack_objects(config, render_operands(config)):
        for image in _object_images(obj):
            found.setdefault(image, [])
            if _where(obj) not in found[image]:
                found[image].append(_where(obj))
    for chart, _ in _charts(config):
        for image in CHART_IMAGES.get(chart.name, ()):
            found.setdefault(image.reference(chart.values), []).append(f"Helm chart {chart.name}: {image.what}")
    return [PulledImage(reference, tuple(by)) for reference, by in found.items()]


def pulled_charts(config: GpuStackConfig) -> list[PulledChart]:
    """The Helm charts, with where Helm fetches each."""
    return [PulledChart(chart.name, chart.version, chart.source.origin, installer)
            for chart, installer in _charts(config)]


def pairs(sources: Sequence[Any], targets: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The items of a config without and with its `registry` side by side: the mirror changes references, never
    what is pulled, so the two lists match item for item."""
    if len(sources) != len(targets):
        raise AssertionError(f"{len(sources)} items without the mirror, {len(targets)} with it")
    return list(zip(sources, targets))
