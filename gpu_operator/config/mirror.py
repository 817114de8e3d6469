"""One `registry` setting that moves every image and chart the stack pulls to a mirror.

An air-gapped or locked-down cluster pulls from a registry of its own, into which each image and chart was copied
under its path: `nvcr.io/nvidia/driver:595.91.07-ubuntu22.04` becomes `<registry>/nvidia/driver:...`,
`oci://registry.k8s.io/nfd/charts` becomes `oci://<registry>/nfd/charts` (the registry host is replaced, the path
kept; `registry` may carry a path of its own, `mirror.example.com/gpu`). With `registry` set, the effective config
has every image of the `operator` and `network` sections moved, the charts' own images moved through their values
(:mod:`gpu_operator.facts.chart_images`), and the charts without a source of their own (`nfd.chart`,
`network.chart`, `dra.chart`) fetched from `oci://<registry>/<path>`. What is set explicitly stays: a chart source,
a chart value naming an image. The agents image is yours and is never moved. `gpu-operator images` lists each
reference with the one the mirror serves it as.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from gpu_operator.config.chart_source import ChartSource, PublishedChart
from gpu_operator.config.clusterpolicy.image_reference import check_repository
from gpu_operator.facts.chart_images import CHART_IMAGES

__all__ = ["check_registry", "mirrored", "mirrored_chart", "with_mirror"]

Model = TypeVar("Model", bound=BaseModel)
#: Top-level sections whose images move (the agents image is the user's own).
_IMAGE_SECTIONS = ("operator", "network")
#: Section → the chart its values configure.
_CHART_SECTIONS = {"nfd": "node-feature-discovery", "network": "network-operator", "dra": "dra-driver-nvidia-gpu"}


def check_registry(value: str) -> str:
    """`host[:port][/path]`: a registry host first, as a mirror is addressed."""
    first = value.split("/", 1)[0]
    if not ("." in first or ":" in first or first == "localhost"):
        raise ValueError(f"{value!r} does not start with a registry host: write host[:port][/path], e.g. "
                         "mirror.example.com or mirror.example.com:5000/gpu")
    check_repository(value)
    return value.rstrip("/")


def _path(reference: str) -> str:
    """The reference without its registry host (`nvcr.io/nvidia/driver:1` → `nvidia/driver:1`)."""
    first, _, rest = reference.partition("/")
    return rest if rest and ("." in first or ":" in first or first == "localhost") else reference


def mirrored(reference: str, registry: str) -> str:
    """An image reference or repository as the mirror serves it (one the mirror serves already is kept, so a config
    moved twice is moved once)."""
    return reference if reference.startswith(f"{registry}/") else f"{registry}/{_path(reference)}"


def mirrored_chart(published: PublishedChart, registry: str) -> ChartSource:
    """Where a chart published at `published.origin` is fetched from the mirror: `oci://<registry>/<path>`."""
    origin = published.home.split("://", 1)[-1]
    return ChartSource(oci=f"oci://{registry}/{_path(origin)}")


def _moved(model: Model, registry: str) -> Model:
    """The model with every image below it moved: a `repository` when set, else a full reference in `image`."""
    updates: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel) and not isinstance(value, ChartSource):  # a chart's home is no image
            moved = _moved(value, registry)
            if moved is not value:
                updates[name] = moved
    repository, image = getattr(model, "repository", None), getattr(model, "image", None)
    if isinstance(repository, str) and repository:
        updates["repository"] = mirrored(repository, registry)
    elif isinstance(image, str) and image and isinstance(repository, str):
        updates["image"] = mirrored(image, registry)
    return model.model_copy(update=updates) if updates else model


def _set(values: Mapping[str, Any], path: tuple[str, ...], value: str) -> dict[str, Any]:
    """`values` with `path` set to `value`, unless the values set it already (what is written explicitly stays)."""
    head, *rest = path
    inner = values.get(head)
    if not rest:
        return {**values, head: inner if inner else value}
    return {**values, head: _set(inner if isinstance(inner, Mapping) else {}, tuple(rest), value)}


def _chart_section(section: Model, chart: str, published: PublishedChart, registry: str) -> Model:
    values = dict(getattr(section, "values"))
    for image in CHART_IMAGES[chart]:
        values = _set(values, image.repository, mirrored(image.default_repository, registry))
    updates: dict[str, Any] = {"values": values}
    if getattr(section, "chart").kind is None:
        updates["chart"] = mirrored_chart(published, registry)
    return section.model_copy(update=updates)


def with_mirror(config: Model, published: Mapping[str, PublishedChart]) -> Model:
    """The config with everything it pulls moved to `config.registry` (unchanged without one). `published` gives
    each chart section's upstream home."""
    registry = getattr(config, "registry", None)
    if registry is None:
        return config
    updates = {name: _moved(getattr(config, name), registry) for name in _IMAGE_SECTIONS}
    moved = config.model_copy(update=updates)
    charts = {name: _chart_section(getattr(moved, name), chart, published[name], registry)
              for name, chart in _CHART_SECTIONS.items()}
    return moved.model_copy(update=charts)
