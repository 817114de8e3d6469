"""The charts' default images are what the published charts pull: each image composed from the chart's own
`values.yaml` as its template composes it (NFD's master.yaml `image.repository:image.tag | default
.Chart.AppVersion`; the Network Operator's operator.yaml `operator.repository/operator.image:operator.tag | default
.Chart.AppVersion` and `OFED_INIT_CONTAINER_IMAGE` from `operator.ofedDriver.initContainer`; the DRA driver's
`image.repository:image.tag`, an empty tag being `v<appVersion>`)."""

from __future__ import annotations

import tarfile
from typing import Any

import pytest
import yaml

from gpu_operator.facts.chart_images import CHART_IMAGES
from tests.support.reference import reference_chart

CHARTS = {"node-feature-discovery": "node-feature-discovery-0.19.0.tgz",
          "network-operator": "network-operator-26.4.1.tgz",
          "dra-driver-nvidia-gpu": "dra-driver-nvidia-gpu-0.4.1.tgz"}


def _chart(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with tarfile.open(reference_chart(CHARTS[name])) as archive:
        def read(member: str) -> dict[str, Any]:
            handle = archive.extractfile(f"{name}/{member}")
            assert handle is not None
            return yaml.safe_load(handle.read())
        return read("values.yaml"), read("Chart.yaml")


def _published(name: str, values: dict[str, Any], chart: dict[str, Any], what: str) -> str:
    app = chart["appVersion"]
    if name == "node-feature-discovery":
        return f"{values['image']['repository']}:{values['image'].get('tag') or app}"
    if name == "dra-driver-nvidia-gpu":
        return f"{values['image']['repository']}:{values['image'].get('tag') or 'v' + app}"
    operator = values["operator"]
    if what == "Network Operator":
        return f"{operator['repository']}/{operator['image']}:{operator.get('tag') or app}"
    if "init container" in what:
        init = operator["ofedDriver"]["initContainer"]
        assert init["enable"] is True
        return f"{init['repository']}/{init['image']}:{init['version']}"
    nfd = values["node-feature-discovery"]["image"]
    return f"{nfd['repository']}:{nfd['tag']}"


@pytest.mark.parametrize("name", list(CHARTS))
def test_the_default_images_are_the_published_charts(name: str) -> None:
    values, chart = _chart(name)
    for image in CHART_IMAGES[name]:
        assert image.reference({}) == _published(name, values, chart, image.what), image.what
        assert image.reference(values) == image.reference({}), "the chart's own values compose the same image"


def test_values_that_name_another_image_win() -> None:
    [nfd] = CHART_IMAGES["node-feature-discovery"]
    assert nfd.reference({"image": {"repository": "mirror.example.com/nfd/node-feature-discovery", "tag": "v9"}}) == \
           "mirror.example.com/nfd/node-feature-discovery:v9"
