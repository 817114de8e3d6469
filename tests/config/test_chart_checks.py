"""Chart sources checked against the disk and the chart's identity, when the config is read.

The published charts in `../shared/reference/charts/` are named as a user would name them, relative to the
checkout (the working directory of the suite), and relative to a config file's directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_operator.config import ConfigError, load_config, parse_config
from gpu_operator.config.chart_checks import INSTALLED_CHARTS
from tests.support.reference import REPO_ROOT, reference_chart

#: section → the published chart it installs, as a file of ../shared/reference/charts/
CHART_FILES = {
    "nfd": "node-feature-discovery-0.19.0.tgz",
    "network": "network-operator-26.4.1.tgz",
    "dra": "dra-driver-nvidia-gpu-0.4.1.tgz",
}


def _relative(file_name: str) -> str:
    reference_chart(file_name)
    return f"../shared/reference/charts/{file_name}"


def problems_of(document: dict[str, Any], base: Path | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(document, base=base)
    return [str(problem) for problem in caught.value.problems]


def test_every_installed_chart_has_a_reference_chart() -> None:
    assert {chart.section for chart in INSTALLED_CHARTS} == set(CHART_FILES)


@pytest.fixture(autouse=True)
def _from_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)


@pytest.mark.parametrize("section", CHART_FILES)
def test_the_published_chart_named_relative_to_the_checkout_validates(section: str) -> None:
    path = _relative(CHART_FILES[section])
    config = parse_config({section: {"chart": {"path": path}}})
    assert getattr(config, section).chart.path == path


def test_nfd_pointed_at_the_reference_chart_validates_and_is_kept_as_written() -> None:
    path = _relative("node-feature-discovery-0.19.0.tgz")
    config = parse_config({"nfd": {"chart": {"path": path}}})
    assert config.nfd.chart.kind == "path"
    assert config.nfd.chart.path == path


def test_a_relative_path_in_a_file_is_read_against_the_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = reference_chart("node-feature-discovery-0.19.0.tgz")
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / chart.name).write_bytes(chart.read_bytes())
    (tmp_path / "stacks").mkdir()
    config_file = tmp_path / "stacks" / "c.yaml"
    config_file.write_text(f"nfd:\n  chart: {{path: ../charts/{chart.name}}}\n")
    assert load_config(config_file).nfd.chart.path == f"../charts/{chart.name}"  # the working directory is not
    monkeypatch.chdir(tmp_path / "stacks")  # the Pulumi program's working directory: the project's main folder
    assert parse_config({"nfd": {"chart": {"path": f"../charts/{chart.name}"}}}).nfd.chart.path is not None


def test_a_chart_directory_validates(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: network-operator\nversion: 26.4.1\n")
    assert parse_config({"network": {"chart": {"path": str(tmp_path)}}}).network.chart.path == str(tmp_path)


#: (document, the problem: key and a piece of its message)
BAD: list[tuple[dict[str, Any], str]] = [
    ({"nfd": {"chart": {"path": "charts/absent.tgz"}}},
     "nfd.chart.path: 'charts/absent.tgz' does not exist; a relative path is read against the working directory. "
     "Give the path of the node-feature-discovery chart: its directory (holding Chart.yaml, as `helm pull --untar` "
     "writes it) or its packaged .tgz"),
    ({"network": {"chart": {"path": "/nonexistent/network-operator"}}},
     "network.chart.path: '/nonexistent/network-operator' does not exist. Give the path of the network-operator chart"),
    ({"dra": {"chart": {"path": "gpu_operator"}}}, "dra.chart.path: 'gpu_operator' is a directory without Chart.yaml"),
    ({"nfd": {"chart": {"path": "README.md"}}}, "nfd.chart.path: 'README.md' is not a packaged chart, a gzipped tar"),
    ({"nfd": {"chart": {"path": "../shared/reference/charts/network-operator-26.4.1.tgz"}}},
     "nfd.chart.path: '../shared/reference/charts/network-operator-26.4.1.tgz' holds the chart 'network-operator', "
     "not node-feature-discovery: the stack renders nfd's values for node-feature-discovery"),
    ({"dra": {"chart": {"path": "../shared/reference/charts/node-feature-discovery-0.19.0.tgz"}}},
     "dra.chart.path: '../shared/reference/charts/node-feature-discovery-0.19.0.tgz' holds the chart "
     "'node-feature-discovery', not dra-driver-nvidia-gpu"),
    ({"nfd": {"chartVersion": "0.18.0",
              "chart": {"path": "../shared/reference/charts/node-feature-discovery-0.19.0.tgz"}}},
     "nfd.chart.path: '../shared/reference/charts/node-feature-discovery-0.19.0.tgz' holds node-feature-discovery "
     "0.19.0, but nfd.chartVersion is 0.18.0: give the path of the 0.18.0 chart, or set nfd.chartVersion: '0.19.0' "
     "to install this one on purpose"),
    ({"network": {"chartVersion": "26.7.0",
                  "chart": {"path": "../shared/reference/charts/network-operator-26.4.1.tgz"}}},
     "network.chart.path: '../shared/reference/charts/network-operator-26.4.1.tgz' holds network-operator 26.4.1, "
     "but network.chartVersion is 26.7.0"),
    ({"nfd": {"chart": {"oci": "oci://mirror.example.com/nfd/charts/node-feature-discovery"}}},
     "nfd.chart.oci: 'oci://mirror.example.com/nfd/charts/node-feature-discovery' ends with the chart's name, which "
     "Helm appends itself (it would pull oci://mirror.example.com/nfd/charts/node-feature-discovery/"
     "node-feature-discovery): give the path the chart is under, oci://mirror.example.com/nfd/charts"),
    ({"dra": {"chart": {"oci": "oci://mirror.example.com/dra-driver-nvidia-gpu"}}},
     "dra.chart.oci: 'oci://mirror.example.com/dra-driver-nvidia-gpu' ends with the chart's name"),
]


@pytest.mark.parametrize(("document", "expected"), BAD, ids=[b[1].split(":")[0] + b[1][30:60] for b in BAD])
def test_a_chart_other_than_the_expected_one_is_refused(document: dict[str, Any], expected: str) -> None:
    reference_chart("node-feature-discovery-0.19.0.tgz")
    [problem] = problems_of(document)
    assert problem.startswith(expected), problem


def test_a_version_set_on_purpose_accepts_that_chart(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("name: node-feature-discovery\nversion: 0.18.3\n")
    config = parse_config({"nfd": {"chartVersion": "0.18.3", "chart": {"path": str(tmp_path)}}})
    assert config.nfd.chart_version == "0.18.3"


def test_the_pinned_dra_chart_refuses_another_version(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("name: dra-driver-nvidia-gpu\nversion: 0.5.0\n")
    [problem] = problems_of({"dra": {"chart": {"path": str(tmp_path)}}})
    assert problem == (f"dra.chart.path: {str(tmp_path)!r} holds dra-driver-nvidia-gpu 0.5.0, but the stack renders "
                       "for dra-driver-nvidia-gpu 0.4.1 (pinned): give the path of the 0.4.1 chart")


def test_a_file_names_its_own_directory_in_the_message(tmp_path: Path) -> None:
    [problem] = problems_of({"nfd": {"chart": {"path": "absent"}}}, base=Path("stacks"))
    assert "a relative path is read against stacks." in problem


def test_the_check_runs_with_the_other_problems() -> None:
    problems = problems_of({"namespace": "gpu", "nfd": {"chart": {"path": "absent"}},
                            "network": {"chart": {"path": "absent"}}, "dra": {"chart": {"path": "absent"}}})
    assert [p.split(":")[0] for p in problems] == ["nfd.chart.path", "network.chart.path", "dra.chart.path"]
