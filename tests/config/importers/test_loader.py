"""load_import: a Helm values file or a ClusterPolicy manifest, told apart by content."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.importers import load_import
from tests.config.importers.values_files import AZURE
from tests.support.reference import reference_file

POLICY = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
          "spec": {"mig": {"strategy": "mixed"}}}


def write(tmp_path: Path, *documents: object) -> Path:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_helm_values_file() -> None:
    config = parse_config(load_import(reference_file(AZURE)))
    assert config.nfd.enabled is False and config.operator.driver.rdma.enabled is True


def test_clusterpolicy_manifest(tmp_path: Path) -> None:
    config = parse_config(load_import(write(tmp_path, POLICY), namespace="gpus"))
    assert (config.operator.mig.strategy, config.operator.dcgm.enabled, config.namespace) == ("mixed", True, "gpus")


def test_the_one_clusterpolicy_among_several_documents(tmp_path: Path) -> None:
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator"}}
    assert load_import(write(tmp_path, other, POLICY))["operator"]["mig"] == {"strategy": "mixed"}
    listed = {"apiVersion": "v1", "kind": "List", "items": [POLICY]}
    assert load_import(write(tmp_path, listed))["operator"]["mig"] == {"strategy": "mixed"}


def test_empty_file_is_the_chart_default(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("# nothing set\n")
    assert load_import(path) == {"namespace": "gpu-operator"}


def test_problems_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, {"mig": {"strategy": "maybe"}})
    with pytest.raises(ConfigError) as caught:
        load_import(path)
    assert caught.value.source == f"Helm values {path}"
    assert [p.path for p in caught.value.problems] == ["mig.strategy"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("driver: [unclosed\n", "not valid YAML"),
        (yaml.safe_dump_all([POLICY, POLICY]), "found 2 ClusterPolicy objects"),
        (yaml.safe_dump_all([{"a": 1}, {"b": 2}]), "found 2 documents"),
    ],
)
def test_unreadable_files(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "input.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words) as caught:
        load_import(path)
    assert caught.value.source == str(path)
