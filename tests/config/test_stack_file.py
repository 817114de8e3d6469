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
                                      "gpu-operator:subscriptionId": "00000000-0000-0000-0000-000000000000"}},
                          "Pulumi.s.yaml")
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


SUBSCRIPTION = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"


def setting_problems(settings: dict[str, object]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        stack_document({"config": {CONFIG_KEY: {}, **settings}}, "Pulumi.s.yaml")
    return {problem.path: problem.message for problem in caught.value.problems}


@pytest.mark.parametrize("settings", [
    {"gpu-operator:adoptExistingObjects": True, "gpu-operator:waitForDaemonsets": "False"},
    {"gpu-operator:adoptExistingObjects": "true", "gpu-operator:waitForDaemonsets": False},
    {"gpu-operator:subscriptionId": SUBSCRIPTION.upper()},
    {"gpu-operator:kubeconfig": "~/.kube/config"},
    {"gpu-operator:kubeconfig": "users:\n- name: me\n  user:\n    exec: {command: kubelogin}\n"},
    {"azure-native:clientSecret": {"secure": "v1:abc"}, "gpu-operator:kubeconfig": {"secure": "v1:def"}},
    {"azure-native:location": "westeurope", "azure-native:useMsi": "true"},
])
def test_settings_the_program_can_read_pass(settings: dict[str, object]) -> None:
    assert stack_document({"config": {CONFIG_KEY: {}, **settings}}, "Pulumi.s.yaml").document == {}


@pytest.mark.parametrize(("key", "value"), [
    ("gpu-operator:adoptExistingObjects", "yes"),
    ("gpu-operator:waitForDaemonsets", "TRUE"),
    ("gpu-operator:waitForDaemonsets", 1),
])
def test_a_boolean_setting_get_bool_would_refuse_is_refused(key: str, value: object) -> None:
    """pulumi's Config._get_bool takes "true", "True", "false", "False" and raises ConfigTypeError otherwise."""
    assert setting_problems({key: value}) == {
        f"config.{key}": f"is {value!r}, and the program reads it as a boolean: write true or false"}


@pytest.mark.parametrize("value", ["0000", 12345, f"{SUBSCRIPTION}x", "my-subscription"])
def test_a_subscription_that_is_no_subscription_id_is_refused(value: object) -> None:
    message = setting_problems({"gpu-operator:subscriptionId": value})["config.gpu-operator:subscriptionId"]
    assert message.startswith(f"is {value!r}, not an Azure subscription id")


def test_a_kubeconfig_that_is_no_string_is_refused() -> None:
    assert setting_problems({"gpu-operator:kubeconfig": {"clusters": []}}) == {
        "config.gpu-operator:kubeconfig": "must be the kubeconfig's text (or its path) as a string"}


@pytest.mark.parametrize(("key", "value"), [
    ("azure-native:clientSecret", "s3cr3t"),
    ("kubernetes:token", "eyJhbGciOi"),
    ("mycompany:apiKey", "abc"),
    ("azure-native:client_secret", "abc"),
    ("gpu-operator:kubeconfig", "users:\n- name: admin\n  user:\n    token: eyJhbGciOi\n"),
    ("kubernetes:kubeconfig", "users:\n- user:\n    client-key-data: LS0tLS1CRUdJTi\n"),
])
def test_a_credential_in_plain_text_is_refused(key: str, value: str) -> None:
    assert setting_problems({key: value}) == {f"config.{key}": (
        "is a credential in plain text, which anyone who reads the stack file can use: store it encrypted with "
        f"`pulumi config set --secret {key}` (it replaces the plain value), and rotate it if the file was shared")}


def test_a_json_string_document_refuses_a_key_written_twice_as_yaml_does() -> None:
    text = '{"namespace": "a", "aks": {"clusterName": "c", "resourceGroup": "rg", "clusterName": "d"}, "namespace": "b"}'
    with pytest.raises(ConfigError) as caught:
        stack_document({"config": {CONFIG_KEY: text}}, "Pulumi.s.yaml")
    assert {problem.path for problem in caught.value.problems} == {"namespace", "aks.clusterName"}
    assert all(problem.message.startswith("duplicate key in the JSON string: JSON keeps only the last one")
               for problem in caught.value.problems)


def test_a_json_string_with_keys_once_is_read() -> None:
    read = stack_document({"config": {CONFIG_KEY: '{"namespace": "gpus", "pools": [{"name": "a"}, {"name": "b"}]}'}},
                          "Pulumi.s.yaml")
    assert read.document == {"namespace": "gpus", "pools": [{"name": "a"}, {"name": "b"}]}
