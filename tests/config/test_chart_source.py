"""Chart sources (`nfd.chart`, `network.chart`, `dra.chart`): each kind resolves for each chart; bad forms are refused.

The disk and the chart's identity (a local path, an OCI path ending in the chart's name) are checked in
`test_chart_checks.py`; here only what the model itself decides.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, GpuStackConfig, parse_config
from gpu_operator.config.chart_source import ChartLocation, ChartSource

#: section → (the chart's name, where it comes from by default, the kind of that home, the version rendered for)
SECTIONS: dict[str, tuple[str, str, str, str]] = {
    "nfd": ("node-feature-discovery", "oci://registry.k8s.io/nfd/charts", "oci", "0.19.0"),
    "network": ("network-operator", "https://helm.ngc.nvidia.com/nvidia", "repository", "26.4.1"),
    "dra": ("dra-driver-nvidia-gpu", "oci://registry.k8s.io/dra-driver-nvidia/charts", "oci", "0.4.1"),
}


def _source(config: GpuStackConfig, section: str) -> ChartSource:
    return getattr(config, section).chart


@pytest.mark.parametrize("section", SECTIONS)
def test_nothing_set_is_the_charts_upstream_home(section: str) -> None:
    from gpu_operator.config.chart_checks import INSTALLED_CHARTS

    name, home, kind, version = SECTIONS[section]
    [chart] = [c for c in INSTALLED_CHARTS if c.section == section]
    source = _source(parse_config({}), section)
    assert source.kind is None
    assert source.locate(chart.published) == ChartLocation(name, kind, home)  # type: ignore[arg-type]
    assert chart.published.version == version


#: (source as written, the kind, `where` as stored: URLs without a trailing slash)
KINDS: list[tuple[dict[str, str], str, str]] = [
    ({"repository": "https://charts.example.com/mirror/"}, "repository", "https://charts.example.com/mirror"),
    ({"oci": "oci://mirror.example.com:5000/helm/charts/"}, "oci", "oci://mirror.example.com:5000/helm/charts"),
    ({"path": "/opt/charts/chart.tgz"}, "path", "/opt/charts/chart.tgz"),
]


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize(("written", "kind", "where"), KINDS, ids=[k[1] for k in KINDS])
def test_each_kind_is_read_for_each_chart(section: str, written: dict[str, str], kind: str, where: str) -> None:
    source = ChartSource.model_validate(written)
    assert (source.kind, getattr(source, kind)) == (kind, where)
    assert GpuStackConfig.model_validate({section: {"chart": written}}).model_dump()[section]["chart"][kind] == where


@pytest.mark.parametrize(("kind", "where", "reference", "origin"), [
    ("repository", "https://charts.example.com/m", "node-feature-discovery", "https://charts.example.com/m"),
    ("oci", "oci://m.example.com/charts", "oci://m.example.com/charts/node-feature-discovery",
     "oci://m.example.com/charts/node-feature-discovery"),
    ("path", "../charts/nfd", "../charts/nfd", "../charts/nfd"),
])
def test_a_location_gives_helm_the_chart_argument_of_its_kind(kind: str, where: str, reference: str,
                                                              origin: str) -> None:
    location = ChartLocation("node-feature-discovery", kind, where)  # type: ignore[arg-type]
    assert (location.reference, location.origin) == (reference, origin)


#: (the chart source as written, a piece of the expected message); `KEY` in the message is the path of the problem
BAD: list[tuple[Any, str, str]] = [
    ({"repository": "https://a.example.com", "path": "x"}, "", "sets repository and path: give exactly one source"),
    ({"oci": "oci://a.example.com/c", "path": "x", "repository": "https://a.example.com"}, "",
     "sets repository and oci and path"),
    ("oci://a.example.com/charts", "", "must be a mapping that names the kind of source: write "
                                       "{oci: oci://a.example.com/charts}"),
    ("https://a.example.com/charts", "", "write {repository: https://a.example.com/charts}"),
    ("../charts/nfd.tgz", "", "write {path: ../charts/nfd.tgz}"),
    ({"url": "https://a.example.com"}, ".url", "unknown key"),
    ({"repository": "http://a.example.com/charts"}, ".repository",
     "is plain HTTP: a chart brings privileged pods and cluster RBAC"),
    ({"repository": "oci://a.example.com/charts"}, ".repository", "is an OCI registry, not a Helm chart repository: "
                                                                  "give it as oci: instead of repository:"),
    ({"repository": "charts.example.com/nvidia"}, ".repository", "is not an https:// URL of a Helm chart repository"),
    ({"repository": "https://"}, ".repository", "is not an https:// URL"),
    ({"repository": "https://a.example.com:port/c"}, ".repository", "is not an https:// URL"),
    ({"repository": "https://a.example.com/my charts"}, ".repository", "is not an https:// URL"),
    ({"repository": "https://user:secret@a.example.com/c"}, ".repository", "carries credentials"),
    ({"repository": "https://a.example.com/c?token=1"}, ".repository", "has a query or fragment"),
    ({"repository": "https://a.example.com/c/index.yaml"}, ".repository",
     "names the repository's index; give its folder, https://a.example.com/c"),
    ({"repository": "https://a.example.com/c/node-feature-discovery-0.19.0.tgz"}, ".repository",
     "names a chart archive"),
    ({"repository": 3}, ".repository", "must be a string, got 3"),
    ({"oci": "https://a.example.com/charts"}, ".oci", "is a web URL"),
    ({"oci": "registry.k8s.io/nfd/charts"}, ".oci", "is not an OCI registry path: write oci://<registry host>/<path>"),
    ({"oci": "oci:///charts"}, ".oci", "is not an OCI registry path"),
    ({"oci": "oci://a.example.com/charts/nfd:0.19.0"}, ".oci", "names a tag or digest; give the registry path only"),
    ({"oci": "oci://a.example.com/charts/nfd@sha256:00"}, ".oci", "names a tag or digest"),
    ({"oci": "oci://robot:pw@a.example.com/charts"}, ".oci", "carries credentials"),
    ({"path": ""}, ".path", "is empty: give the path of a chart directory"),
    ({"path": "https://a.example.com/nfd-0.19.0.tgz"}, ".path", "is a URL: give it as repository: (https://) or oci:"),
]


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize(("written", "key", "message"), BAD, ids=[f"{b[1] or 'chart'}:{b[2][:30]}" for b in BAD])
def test_a_bad_source_is_refused_naming_the_key(section: str, written: Any, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({section: {"chart": written}})
    [problem] = caught.value.problems
    assert problem.path == f"{section}.chart{key}"
    assert message in problem.message


@pytest.mark.parametrize("chart", [{"repository": "https://user:secret@a.example.com/c"},
                                   {"oci": "oci://user:secret@a.example.com/c"}, "https://user:secret@a.example.com/c"])
def test_credentials_are_never_repeated_in_the_message(chart: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"nfd": {"chart": chart}})
    assert "secret" not in str(caught.value)


def test_chart_version_keys_keep_their_meaning_beside_a_source() -> None:
    config = parse_config({"nfd": {"chartVersion": "0.18.3", "chart": {"oci": "oci://m.example.com/nfd"}},
                           "network": {"chartVersion": "26.4.0", "chart": {"repository": "https://m.example.com/n"}}})
    assert (config.nfd.chart_version, config.nfd.chart.oci) == ("0.18.3", "oci://m.example.com/nfd")
    assert (config.network.chart_version, config.network.chart.repository) == ("26.4.0", "https://m.example.com/n")


def test_the_dra_chart_has_no_version_key_it_is_pinned() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"dra": {"chartVersion": "0.5.0"}})
    assert [p.path for p in caught.value.problems] == ["dra.chartVersion"]


def test_a_source_written_back_is_what_was_given() -> None:
    written = {"nfd": {"chart": {"oci": "oci://m.example.com/nfd/charts"}}}
    assert parse_config(written).to_document(exclude_defaults=True)["nfd"] == written["nfd"]
