"""The multi-language GpuOperator: its schema as Pulumi's analyzer infers it, the component under mocks, the
provider's config errors, and the plugin folder."""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from gpu_operator.components.multi_language import PACKAGE_NAME, GpuOperator, GpuOperatorProvider
from gpu_operator.components.multi_language.component import known_document
from gpu_operator.components.multi_language.plugin_folder import SHIPPED, plugin_settings, write_plugin_folder
from gpu_operator.components.multi_language.provider import property_errors
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.analyzer import Analyzer, PropertyType

from gpu_operator.config import ConfigError, Problem
from gpu_operator.render import render_operands
from tests.support.pulumi_mocks import Recording, run_program

TOKEN = "gpu-operator:index:GpuOperator"
PROVIDER = "pulumi:providers:kubernetes"
KUBECONFIG = "apiVersion: v1\nkind: Config\n"
CONFIG = {"namespace": "gpu-ml", "nfd": {"enabled": False},
          "operator": {"driver": {"enabled": False, "upgradePolicy": {"maxParallelUpgrades": 3.0}}}}
BAD_CONFIG = {"operator": {"driver": {"enabled": "maybe"}}, "bogus": 1}
#: How the engine marks a secret value.
SECRET_SIGNATURE_KEY, SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
OUTPUTS = ("namespace", "gpuResourceNames", "nodeSelectorLabels", "runtimeClassName", "daemonsetNames")


# --- the schema --------------------------------------------------------------------------------------------------


def test_the_analyzer_describes_the_component_with_its_inputs_and_outputs() -> None:
    result = Analyzer(PACKAGE_NAME).analyze([GpuOperator])
    component = result["component_definitions"]["GpuOperator"]
    inputs = component.inputs
    assert set(inputs) == {"kubeconfig", "config", "waitForDaemonsets"}
    assert (inputs["kubeconfig"].type, inputs["kubeconfig"].optional, inputs["kubeconfig"].plain) == (
        PropertyType.STRING, False, None)  # an input: another resource's output may be passed
    assert (inputs["config"].type, inputs["config"].optional, inputs["config"].plain) == (
        PropertyType.OBJECT, True, True)  # plain: rendered when the component is constructed
    assert inputs["config"].additional_properties is not None
    assert inputs["config"].additional_properties.ref == "pulumi.json#/Any"
    assert (inputs["waitForDaemonsets"].type, inputs["waitForDaemonsets"].optional) == (PropertyType.BOOLEAN, True)
    assert component.inputs_mapping["waitForDaemonsets"] == "wait_for_daemonsets"
    outputs = component.outputs
    assert set(outputs) == set(OUTPUTS)
    assert outputs["runtimeClassName"].optional and not outputs["namespace"].optional
    items = outputs["gpuResourceNames"].items
    assert items is not None and items.type == PropertyType.STRING
    assert outputs["nodeSelectorLabels"].additional_properties is not None
    assert result["type_definitions"] == {} and result["dependencies"] == set()


def test_the_provider_schema_names_the_package_and_the_token_of_the_python_component() -> None:
    schema = json.loads(GpuOperatorProvider(version="1.2.3").schema)
    assert (schema["name"], schema["version"]) == ("gpu-operator", "1.2.3")
    assert list(schema["resources"]) == [TOKEN]
    resource = schema["resources"][TOKEN]
    assert resource["isComponent"] is True
    assert resource["requiredInputs"] == ["kubeconfig"]
    assert sorted(resource["required"]) == sorted(set(OUTPUTS) - {"runtimeClassName"})
    assert all(prop.get("description") for prop in [*resource["inputProperties"].values(),
                                                      *resource["properties"].values()])
    assert "\n" not in resource["description"]
    assert TOKEN == f"{PACKAGE_NAME}:index:{GpuOperator.__name__}"


# --- the component under mocks -----------------------------------------------------------------------------------


def _program(args: dict[str, Any], outputs: dict[str, Any]):
    def program() -> None:
        operator = GpuOperator("gpu", args)  # type: ignore[arg-type]
        pulumi.Output.all(*(getattr(operator, name) for name in (
            "namespace", "gpu_resource_names", "node_selector_labels", "runtime_class_name", "daemonset_names",
        ))).apply(lambda values: outputs.update(zip(OUTPUTS, values)))
    return program


@pytest.fixture(scope="module")
def outputs() -> dict[str, Any]:
    return {}


@pytest.fixture(scope="module")
def recording(outputs: dict[str, Any]) -> Recording:
    return run_program(_program({"kubeconfig": KUBECONFIG, "config": CONFIG}, outputs))


def test_registers_a_provider_from_the_kubeconfig_and_the_python_operator_as_children(recording: Recording) -> None:
    [entry, inner] = recording.of_type(TOKEN)
    assert entry.parent == "" or "Stack" in entry.parent
    [provider] = recording.of_type(PROVIDER)
    assert provider.parent == entry.urn and provider.name == "gpu-kubernetes"
    assert provider.inputs["kubeconfig"] == {SECRET_SIGNATURE_KEY: SECRET_SIGNATURE, "value": KUBECONFIG}
    assert inner.parent == entry.urn and inner.name == "gpu"  # a Python program's logical names
    objects = recording.of_type("kubernetes:")
    assert objects and all(obj.provider.startswith(provider.urn + "::") for obj in objects)


def test_the_python_operator_gets_the_config(recording: Recording) -> None:
    objects = recording.of_type("kubernetes:")
    namespaces = {obj.inputs["metadata"].get("namespace") for obj in objects} - {None}
    assert namespaces == {"gpu-ml"}
    daemonsets = {obj.inputs["metadata"]["name"] for obj in recording.of_type("kubernetes:apps/v1:DaemonSet")}
    assert "nvidia-driver-daemonset" not in daemonsets and "nvidia-device-plugin-daemonset" in daemonsets
    assert not recording.of_type("kubernetes:helm.sh/v4:Chart")  # nfd.enabled: false


def test_hands_on_the_python_operators_outputs(recording: Recording, outputs: dict[str, Any]) -> None:
    config = known_document(CONFIG)  # what the component validates: whole floats from the wire are ints again
    expected = [o["metadata"]["name"] for operand in render_operands(config) for o in operand.objects
                if o["kind"] == "DaemonSet"]
    assert outputs["namespace"] == "gpu-ml"
    assert outputs["daemonsetNames"] == expected
    assert outputs["gpuResourceNames"] == ["nvidia.com/gpu"]
    assert outputs["runtimeClassName"] == "nvidia"
    assert outputs["nodeSelectorLabels"]["nvidia.com/gpu.present"] == "true"
    [entry, _] = recording.of_type(TOKEN)
    assert set(recording.outputs[entry.urn]) == set(OUTPUTS)


def test_a_bad_config_registers_nothing_and_raises_the_config_error() -> None:
    recording = Recording()
    with pytest.raises(ConfigError) as error:
        run_program(_program({"kubeconfig": KUBECONFIG, "config": BAD_CONFIG}, {}), recording=recording)
    assert [p.path for p in error.value.problems] == ["operator.driver.enabled", "bogus"]
    assert error.value.source == "config"
    assert recording.registrations == []


def test_numbers_come_as_floats_over_the_wire_and_whole_ones_are_ints_again() -> None:
    config = known_document({"operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 3.0}}}})
    assert config.operator.driver.upgrade_policy.max_parallel_upgrades == 3
    with pytest.raises(ConfigError, match="must be a whole number"):
        known_document({"operator": {"driver": {"upgradePolicy": {"maxParallelUpgrades": 3.5}}}})


def test_a_config_that_is_not_known_at_construction_is_a_config_error() -> None:
    def program() -> None:
        GpuOperator("gpu", {"kubeconfig": KUBECONFIG,  # type: ignore[typeddict-item]
                            "config": {"namespace": pulumi.Output.secret("gpu-ml")}})

    recording = Recording()
    with pytest.raises(ConfigError, match="must be known when the component is constructed"):
        run_program(program, recording=recording)
    assert recording.registrations == []


# --- the provider ------------------------------------------------------------------------------------------------


def test_config_problems_become_input_property_errors_under_the_config_input() -> None:
    error = property_errors(ConfigError([Problem("operator.driver.enabled", "must be a boolean"),
                                         Problem("", "must be a mapping")]))
    assert isinstance(error, InputPropertiesError)
    assert error.message == "2 problems in the config document"
    assert error.errors == [{"property_path": "config.operator.driver.enabled", "reason": "must be a boolean"},
                            {"property_path": "config", "reason": "must be a mapping"}]


def test_the_provider_reports_a_bad_config_as_input_errors_not_as_a_failure_with_a_traceback() -> None:
    provider = GpuOperatorProvider()
    with pytest.raises(InputPropertiesError) as error:
        provider.construct("gpu", TOKEN, {"kubeconfig": KUBECONFIG, "config": BAD_CONFIG})
    assert [e["property_path"] for e in error.value.errors or []] == ["config.operator.driver.enabled",
                                                                      "config.bogus"]
    assert error.value.__cause__ is None and error.value.__suppress_context__


# --- the plugin folder -------------------------------------------------------------------------------------------


def test_the_shipped_folder_is_a_python_plugin_whose_virtualenv_is_the_one_it_is_installed_in() -> None:
    settings = yaml.safe_load((SHIPPED / "PulumiPlugin.yaml").read_text())
    assert settings["runtime"]["name"] == "python"
    assert settings["runtime"]["options"]["toolchain"] == "pip"
    relative = Path(settings["runtime"]["options"]["virtualenv"])
    # the layout the shipped folder is written for, whatever this interpreter is: a virtualenv's (sysconfig's
    # `venv` scheme), <venv>/lib/pythonX.Y/site-packages/gpu_operator/components/multi_language
    venv = Path("/venv")
    site_packages = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(venv), "platbase": str(venv)}))
    depth = len(site_packages.relative_to(venv).parts) + len(("gpu_operator", "components", "multi_language"))
    assert relative.parts == ("..",) * depth
    assert "serve()" in (SHIPPED / "__main__.py").read_text()


def test_a_written_plugin_folder_names_the_given_virtualenv(tmp_path: Path) -> None:
    folder = write_plugin_folder(tmp_path / "plugin", tmp_path / "venv")
    settings = yaml.safe_load((folder / "PulumiPlugin.yaml").read_text())
    assert settings == plugin_settings(tmp_path / "venv")
    assert settings["runtime"]["options"]["virtualenv"] == str((tmp_path / "venv").resolve())
    assert (folder / "__main__.py").read_text() == (SHIPPED / "__main__.py").read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["PulumiPlugin.yaml", "__main__.py"]


def test_a_written_plugin_folder_defaults_to_this_interpreter(tmp_path: Path) -> None:
    settings = yaml.safe_load((write_plugin_folder(tmp_path) / "PulumiPlugin.yaml").read_text())
    assert settings["runtime"]["options"]["virtualenv"] == str(Path(sys.prefix).resolve())
