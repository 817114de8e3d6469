"""examples/multi-language: the YAML and TypeScript programs agree with the provider's schema and carry a valid
config (the e2e tier deploys both under the real engine)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from gpu_operator.components.multi_language import GpuOperatorProvider

from gpu_operator.config import parse_config
from tests.support.reference import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "multi-language"
TOKEN = "gpu-operator:index:GpuOperator"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(GpuOperatorProvider().schema)["resources"][TOKEN]


@pytest.fixture(scope="module")
def program() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "yaml" / "Pulumi.yaml").read_text())


def test_the_yaml_program_creates_the_component_with_schema_inputs(program: dict[str, Any],
                                                                    schema: dict[str, Any]) -> None:
    assert program["runtime"] == "yaml"
    assert program["config"]["kubeconfig"] == {"type": "string", "secret": True}
    [resource] = program["resources"].values()
    assert resource["type"] == TOKEN
    assert set(resource["properties"]) <= set(schema["inputProperties"])
    assert set(schema["requiredInputs"]) <= set(resource["properties"])
    parse_config(resource["properties"]["config"])


def test_the_yaml_program_exports_every_output(program: dict[str, Any], schema: dict[str, Any]) -> None:
    assert program["outputs"] == {name: f"${{gpu.{name}}}" for name in schema["properties"]}


def test_the_typescript_program_uses_the_generated_sdk_and_exports_every_output(schema: dict[str, Any]) -> None:
    source = (EXAMPLES / "typescript" / "index.ts").read_text()
    assert 'from "@pulumi/gpu-operator"' in source and "new gpu.GpuOperator(" in source
    assert 'requireSecret("kubeconfig")' in source
    exported = dict(re.findall(r"^export const (\w+) = operator\.(\w+);$", source, re.MULTILINE))
    assert exported == {name: name for name in schema["properties"]}


def test_both_programs_pass_the_same_config(program: dict[str, Any]) -> None:
    """The TypeScript object literal, read as JSON5-ish text, holds the YAML program's document."""
    source = (EXAMPLES / "typescript" / "index.ts").read_text()
    literal = re.search(r"config: (\{.*?\n    \}),", source, re.DOTALL)
    assert literal is not None
    text = re.sub(r"//[^\n]*", "", literal.group(1))
    text = re.sub(r"(\w+):", r'"\1":', text)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    assert json.loads(text) == program["resources"]["gpu"]["properties"]["config"]


def test_the_typescript_project_is_a_nodejs_project_on_npm() -> None:
    project = yaml.safe_load((EXAMPLES / "typescript" / "Pulumi.yaml").read_text())
    assert project["runtime"]["name"] == "nodejs"
    package = json.loads((EXAMPLES / "typescript" / "package.json").read_text())
    assert package["main"] == "index.ts"
    assert "@pulumi/pulumi" in package["dependencies"] and "typescript" in package["devDependencies"]
    assert json.loads((EXAMPLES / "typescript" / "tsconfig.json").read_text())["files"] == ["index.ts"]
