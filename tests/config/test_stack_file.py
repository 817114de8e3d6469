"""Pulumi stack files: told apart from config documents, and read for what stacks/__main__.py deploys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_operator.config import ConfigError, load_config, parse_config
from gpu_operator.config.loader import load_document
from gpu_operator.config.stack_file import CONFIG_KEY, is_stack_file, stack_document
from tests.conftest import ROOT


@pytest.mark.parametrize(("data", "expected"), [
    ({"config": {"gpu-operator:config": {}}}, True),
    ({"config": {"azure-native:location": "westeurope"}}, True),
    ({"config": {}, "secretsprovider": "passphrase"}, True),
    ({"config": None, "encryptedkey": "x"}, True),
    ({"config": {"operator": {}}, "namespace": "x"}, False),  # a config document with a misplaced key
    ({"config": "text"}, False),
    ({"operator": {}}, False),
    ([], False),
])
def test_a_stack_file_is_told_by_its_config_key(data: object, expected: bool) -> None:
    assert is_stack_file(data) is expected


@pytest.mark.parametrize("stack", ["Pulumi.dev.yaml", "Pulumi.prod.yaml"])
def test_load_config_reads_a_stack_files_document(stack: str) -> None:
    path = ROOT / "stacks" / stack
    document = yaml.safe_load(path.read_text())["config"][CONFIG_KEY]
    assert load_config(path) == parse_config(document)
    loaded = load_document(path)
    assert loaded.source == f"{path} ({CONFIG_KEY})" and loaded.notes == ()


def test_a_bare_config_key_is_the_projects() -> None:
    read = stack_document({"config": {"config": {"namespace": "gpus"}}}, "Pulumi.s.yaml")
    assert read.document == {"namespace": "gpus"}


def test_the_programs_target_settings_are_not_reported() -> None:
    read = stack_document({"config": {CONFIG_KEY: {}, "gpu-operator:kubeconfig": {"secure": "v1:x"},
                                      "gpu-operator:subscriptionId": "0"}}, "Pulumi.s.yaml")
    assert read.notes == ()


def test_every_secret_leaf_is_listed() -> None:
    data = {"config": {CONFIG_KEY: {"aks": {"tags": {"a": {"secure": "v1:x"}}},
                                    "pools": [{"tags": {"b": {"secure": "v1:y"}}}]}}}
    with pytest.raises(ConfigError) as caught:
        stack_document(data, "Pulumi.s.yaml")
    assert [problem.path for problem in caught.value.problems] == ["aks.tags.a", "pools[0].tags.b"]
    assert caught.value.source == f"Pulumi.s.yaml ({CONFIG_KEY})"


def test_a_null_config_is_the_empty_document(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(f"config:\n  {CONFIG_KEY}:\n")
    assert load_config(path) == parse_config({})


def test_top_level_keys_pulumi_does_not_know_are_reported() -> None:
    read = stack_document({"config": {CONFIG_KEY: {}}, "namespace": "gpus"}, "Pulumi.s.yaml")
    assert read.notes == ("namespace is not a stack-file setting and is not read (the stack's settings go under "
                          "config:)",)
