"""Every image a shipped config references is pullable today: published by NVIDIA, the NFD chart's, or named by
the config itself.

The published set comes from NVIDIA's own chart values (`helm-values/` in the reference data): every
`repository/image:version` the v26.7.0 and v25.10.1 charts (and the AKS values beside them) name, the operator and
validator images at each chart's appVersion, and NVIDIA's OS-suffix rule for the driver, GDS and GDRCopy images
(`-<osTag>` of a node OS the config declares). Anything else must be named by the config: an image section it sets
(repository, image or version, with NVIDIA's suffixes after it), `agents.image`, or the image `agents.build` pushes.
The agents image nobody publishes (`ghcr.io/pulumi-gpu-operator/agents`) therefore fails this test, wherever it
comes back from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic.alias_generators import to_camel

from gpu_operator.config import BUILTIN_DEFAULT, GpuStackConfig, parse_config
from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import ImageFields
from gpu_operator.render import render
from gpu_operator.render.images import image_path
from gpu_operator.render.nfd import nfd_chart
from tests.golden.cases import EXAMPLES
from tests.support.agents import AGENTS_IMAGE, with_agents
from tests.support.reference import reference_file
from tests.support.stack_programs import STACKS_DIR, stack_config, stack_files

#: Chart values files whose images NVIDIA published, with the chart's appVersion (the operator/validator tag).
CHART_VALUES = {
    "helm-values/gpu-operator-v26.7.0-values.yaml": "v26.7.0",
    "helm-values/gpu-operator-v25.10.1-values.yaml": "v25.10.1",
    "helm-values/aks-rdma-infiniband/gpu-operator-values.yaml": None,
}
#: Sections whose image NVIDIA publishes once per node OS (`driver:595.91.07-ubuntu22.04`).
OS_SUFFIXED = frozenset({"driver", "gds", "gdrcopy"})
#: Node Feature Discovery's own image, as its chart references it (chart version = appVersion).
NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery"
_ENV_IMAGE = re.compile(r"_IMAGE$")


def _image_sections(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """(path, mapping) of every values mapping that names an image."""
    if isinstance(values, Mapping):
        if isinstance(values.get("image"), str) and values["image"]:
            yield path, values
        for key, value in values.items():
            yield from _image_sections(value, (*path, str(key)))


@cache
def published() -> tuple[frozenset[str], frozenset[str]]:
    """(published references, references NVIDIA also publishes with an OS suffix)."""
    plain: set[str] = set()
    per_os: set[str] = set()
    for relative, app_version in CHART_VALUES.items():
        values = yaml.safe_load(reference_file(relative).read_text()) or {}
        for path, section in _image_sections(values):
            version = section.get("version") or app_version
            if not section.get("repository") or not version:
                continue  # user-supplied (vgpuManager) or an image the file does not pin
            reference = f"{section['repository']}/{section['image']}:{version}"
            plain.add(reference)
            if path and path[0] in OS_SUFFIXED and len(path) == 1:
                per_os.add(reference)
    return frozenset(plain), frozenset(per_os)


def _field(model: ConfigModel, key: str) -> Any:
    """The attribute of `model` a camelCase document key sets."""
    for name, info in type(model).model_fields.items():
        if key in (info.alias, to_camel(name), name):
            return getattr(model, name)
    raise KeyError(key)


def _named_sections(document: Any, model: Any) -> Iterator[ImageFields]:
    """Parsed image sections of which the document itself sets repository, image or version."""
    if not isinstance(document, Mapping) or not isinstance(model, ConfigModel):
        return
    if isinstance(model, ImageFields) and any(document.get(k) for k in ("repository", "image", "version")):
        yield model
    for key, value in document.items():
        if isinstance(value, Mapping):
            yield from _named_sections(value, _field(model, key))


def named_by_config(document: Mapping[str, Any], config: GpuStackConfig) -> tuple[frozenset[str], frozenset[str]]:
    """(exact references, reference prefixes) the config names itself."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for section in _named_sections(document.get("operator", {}), config.operator):
        reference = image_path(section)
        exact.add(reference)
        prefixes.add(f"{reference}-")  # NVIDIA's OS tag, or precompiled kernel and OS tag, after the version
    agents = document.get("agents") or {}
    if agents.get("image") or agents.get("build"):
        exact.add(config.agents.image.reference)
    nfd_values = (document.get("nfd") or {}).get("values") or {}
    nfd = nfd_values.get("image") if isinstance(nfd_values.get("image"), Mapping) else None
    if nfd:
        exact.add(f"{nfd.get('repository', NFD_IMAGE)}:{nfd.get('tag', f'v{config.nfd.chart_version}')}")
    return frozenset(exact), frozenset(prefixes)


def referenced_images(objects: Any) -> Iterator[tuple[str, str]]:
    """(where, reference) of every container image and every `*_IMAGE` env value in rendered objects."""
    def walk(value: Any, where: str) -> Iterator[tuple[str, str]]:
        if isinstance(value, Mapping):
            if isinstance(value.get("image"), str):
                yield where, value["image"]
            name = value.get("name")
            if isinstance(name, str) and _ENV_IMAGE.search(name) and isinstance(value.get("value"), str):
                yield f"{where}.{name}", value["value"]
            label = value.get("metadata", {}).get("name", "") if isinstance(value.get("metadata"), Mapping) else ""
            for key, item in value.items():
                yield from walk(item, f"{where}/{label}" if label and key == "spec" else where)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item, where)
    yield from walk(list(objects), "")


def allowed_images(document: Mapping[str, Any], config: GpuStackConfig) -> tuple[frozenset[str], frozenset[str]]:
    """(exact references, reference prefixes) a config may reference: published, the NFD chart's, or its own."""
    plain, per_os = published()
    os_tags = {os.tag for os in config.cluster.operating_systems}
    exact, prefixes = named_by_config(document, config)
    allowed = set(plain) | {f"{reference}-{tag}" for reference in per_os for tag in os_tags} | exact
    chart = nfd_chart(config)
    if chart is not None:
        allowed.add(f"{NFD_IMAGE}:v{chart.version.removeprefix('v')}")
    return frozenset(allowed), prefixes


def not_allowed(objects: Any, allowed: tuple[frozenset[str], frozenset[str]]) -> list[str]:
    exact, prefixes = allowed
    return sorted({
        f"{where}: {reference}" for where, reference in referenced_images(objects)
        if reference not in exact and not any(reference.startswith(p) for p in prefixes)
    })


def _objects(config: GpuStackConfig) -> list[Any]:
    """The rendered objects, and the values the NFD chart is installed with (they could name an image too)."""
    chart = nfd_chart(config)
    return [*render(config), *([{"kind": "HelmChartValues", "spec": chart.values}] if chart is not None else [])]


def unpublished(document: Mapping[str, Any], source: str = "config") -> list[str]:
    """Every image the document's render references that is neither published nor named by the document."""
    config = parse_config(document, source=source)
    return not_allowed(_objects(config), allowed_images(document, config))


def _stack_documents() -> dict[str, dict[str, Any]]:
    return {
        f"stacks/Pulumi.{env}.yaml": json.loads(stack_config(path)["gpu-operator:config"])
        for env, path in stack_files(STACKS_DIR).items()
    }


SHIPPED: dict[str, Path | None] = {
    "empty document": None,
    "built-in default": BUILTIN_DEFAULT,
    **{f"examples/configs/{p.name}": p for p in sorted(EXAMPLES.glob("*.yaml"))},
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_configs_reference_only_published_images(name: str) -> None:
    path = SHIPPED[name]
    document = yaml.safe_load(path.read_text()) if path is not None else {}
    assert unpublished(document, name) == []


@pytest.mark.parametrize("name", sorted(_stack_documents()))
def test_stack_configs_reference_only_published_images(name: str) -> None:
    assert unpublished(_stack_documents()[name], name) == []


def test_the_published_set_comes_from_the_chart_values() -> None:
    plain, per_os = published()
    assert "nvcr.io/nvidia/gpu-operator:v26.7.0" in plain
    assert "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in plain
    assert "nvcr.io/nvidia/driver:595.91.07" in per_os
    assert "nvcr.io/nvidia/driver:580.105.08" in per_os
    assert not any("agents" in reference for reference in plain)


# --- the check fails where it must ------------------------------------------------------------------------------


def _swap_first_image(objects: list[Any], image: str) -> list[Any]:
    """The objects with the first container of the first DaemonSet running `image` instead."""
    swapped = json.loads(json.dumps(objects))
    daemonset = next(o for o in swapped if o["kind"] == "DaemonSet")
    daemonset["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return swapped


@pytest.mark.parametrize("image", [
    "ghcr.io/pulumi-gpu-operator/agents:0.1.0",        # the agents image this package used to default to
    "nvcr.io/nvidia/k8s-device-plugin:v0.99.0",        # a version NVIDIA never published
    "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04",     # a published driver for a node OS the config does not declare
    "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0-ubuntu22.04",  # the OS suffix on an image that has none
])
def test_an_image_neither_published_nor_named_is_reported(image: str) -> None:
    config = parse_config({})
    objects = _swap_first_image(_objects(config), image)
    assert [p for p in not_allowed(objects, allowed_images({}, config)) if p.endswith(image)], image


def test_an_unpublished_image_in_a_validator_env_is_reported() -> None:
    config = parse_config({})
    objects = json.loads(json.dumps(_objects(config)))
    key = ("DaemonSet", "nvidia-operator-validator")
    validator = next(o for o in objects if (o["kind"], o["metadata"]["name"]) == key)
    cuda = next(c for c in validator["spec"]["template"]["spec"]["initContainers"] if c["name"] == "cuda-validation")
    next(e for e in cuda["env"] if e["name"] == "VALIDATOR_IMAGE")["value"] = "nvcr.io/nvidia/gpu-operator:v99.0.0"
    assert not_allowed(objects, allowed_images({}, config)) == [
        "/nvidia-operator-validator.VALIDATOR_IMAGE: nvcr.io/nvidia/gpu-operator:v99.0.0"
    ]


@pytest.mark.parametrize("document", [
    with_agents(),                                        # agents.image: the user pushed it
    {"operator": {"driver": {"version": "999.1.1"}}},     # a driver version the config names itself
    {"operator": {"devicePlugin": {"repository": "mirror.example.com/nvidia", "image": "k8s-device-plugin",
                                   "version": "v0.20.0"}}},
])
def test_an_image_the_config_names_is_allowed(document: dict[str, Any]) -> None:
    assert unpublished(document) == []


def test_the_agents_image_counts_as_named_only_when_configured() -> None:
    objects = render(parse_config(with_agents()))
    assert AGENTS_IMAGE in {reference for _, reference in referenced_images(objects)}
    assert AGENTS_IMAGE not in published()[0]
    assert named_by_config({}, parse_config({})) == (frozenset(), frozenset())


def test_a_built_agents_image_counts_as_named() -> None:
    document = {"agents": {"build": {"registry": {"resourceGroup": "rg-gpu", "name": "acrgpu"}}}}
    assert unpublished(document) == []
    config = parse_config(document)
    assert config.agents.image.reference in {reference for _, reference in referenced_images(render(config))}
