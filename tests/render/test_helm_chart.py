"""A rendered Helm chart: what Helm is given for each kind of source, and Helm's values merge (mappings merge
recursively, lists and scalars are replaced, inputs untouched)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.config.chart_source import ChartLocation
from gpu_operator.render.dra.chart import dra_chart
from gpu_operator.render.helm_chart import HelmChart, merge_values
from gpu_operator.render.network.chart import network_chart
from gpu_operator.render.nfd import nfd_chart


def test_merge_values_layers_like_helm() -> None:
    base = {"nfd": {"enabled": True, "worker": {"tolerations": [{"key": "a"}]}}, "image": "x"}
    overrides = {"nfd": {"worker": {"tolerations": [{"key": "b"}]}, "extra": 1}, "image": None}
    merged = merge_values(base, overrides)
    assert merged == {"nfd": {"enabled": True, "worker": {"tolerations": [{"key": "b"}]}, "extra": 1}, "image": None}
    assert base["nfd"]["worker"]["tolerations"] == [{"key": "a"}]
    merged["nfd"]["extra"] = 2
    assert overrides["nfd"]["extra"] == 1


#: source kind → (where, Helm's chart argument, the repository URL, the version Helm is asked for)
SOURCES: dict[str, tuple[str, str, str, str | None]] = {
    "repository": ("https://charts.example.com/m", "network-operator", "https://charts.example.com/m", "26.4.1"),
    "oci": ("oci://charts.example.com/m", "oci://charts.example.com/m/network-operator", "", "26.4.1"),
    "path": ("../charts/network-operator-26.4.1.tgz", "../charts/network-operator-26.4.1.tgz", "", None),
}


@pytest.mark.parametrize("kind", SOURCES)
def test_a_chart_gives_helm_what_its_source_kind_needs(kind: str) -> None:
    where, *expected = SOURCES[kind]
    chart = HelmChart(source=ChartLocation("network-operator", kind, where),  # type: ignore[arg-type]
                      version="26.4.1", namespace="n", values={})
    assert [chart.chart, chart.repository, chart.pinned_version] == expected
    assert (chart.name, chart.version) == ("network-operator", "26.4.1")


@pytest.mark.parametrize(("render", "section", "name"), [
    (nfd_chart, "nfd", "node-feature-discovery"),
    (network_chart, "network", "network-operator"),
    (dra_chart, "dra", "dra-driver-nvidia-gpu"),
])
def test_each_chart_is_rendered_from_its_sections_source(render: Any, section: str, name: str) -> None:
    config = parse_config({section: {"chart": {"oci": "oci://mirror.example.com/helm"}}})
    chart = render(config)
    assert chart.source == ChartLocation(name, "oci", "oci://mirror.example.com/helm")
    assert chart.chart == f"oci://mirror.example.com/helm/{name}"
