"""The GpuDevice CRD: valid for Kubernetes, structural, and accepting exactly what the agent publishes."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jsonschema
import pytest

from gpu_operator.agents.feature_discovery import gpu_devices
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.render import gpu_device_crd as crd_module
from gpu_operator.render.gpu_device_crd import gpu_device_crd
from tests.support.schemas import KUBERNETES_VERSIONS, _to_json_schema, builtin_errors


def _version() -> dict[str, Any]:
    (version,) = gpu_device_crd()["spec"]["versions"]
    return version


def _validator() -> jsonschema.Validator:
    schema = copy.deepcopy(_version()["schema"]["openAPIV3Schema"])
    return jsonschema.Draft202012Validator(_to_json_schema(schema))


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_valid_custom_resource_definition(version: str) -> None:
    assert builtin_errors(gpu_device_crd(), version) == []


def test_names_agree_with_the_agent() -> None:
    spec = gpu_device_crd()["spec"]
    assert spec["group"] == gpu_devices.GROUP and spec["names"]["kind"] == gpu_devices.KIND
    assert spec["names"]["plural"] == gpu_devices.GPU_DEVICES.plural and spec["scope"] == "Cluster"
    assert _version()["name"] == gpu_devices.VERSION and _version()["served"] and _version()["storage"]
    assert gpu_device_crd()["metadata"]["name"] == "gpudevices.gpu.pulumi-gpu-operator.io" == crd_module.NAME


def _structural_problems(node: dict[str, Any], path: str = "") -> list[str]:
    problems = [] if "type" in node else [f"{path or '<root>'}: no type"]
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties and additionalProperties")
    for name, child in node.get("properties", {}).items():
        if name != "metadata" or path:
            problems += _structural_problems(child, f"{path}.{name}")
    if "items" in node:
        problems += _structural_problems(node["items"], f"{path}[]")
    return problems


def test_schema_is_structural() -> None:
    assert _structural_problems(_version()["schema"]["openAPIV3Schema"]) == []


def test_printer_columns_point_at_schema_fields() -> None:
    schema = _version()["schema"]["openAPIV3Schema"]
    columns = {c["name"]: c for c in _version()["additionalPrinterColumns"]}
    assert list(columns) == ["Node", "Index", "Product", "Memory", "MIG", "UUID", "Driver", "Age"]
    assert {name for name, c in columns.items() if c.get("priority", 0) == 0} == {
        "Node",
        "Index",
        "Product",
        "Memory",
        "MIG",
        "Age",
    }
    for name, column in columns.items():
        if column["jsonPath"].startswith(".metadata"):
            continue
        node = schema
        for part in column["jsonPath"].lstrip(".").split("."):
            node = node["properties"][part]
        assert node["type"] == column["type"], name


@pytest.mark.parametrize("profile", ["t4-1x", "h200-8x", "a100-8x-mig", "a100-4x-mixed-mig"])
def test_agent_objects_validate_against_the_crd(profile: str) -> None:
    nvml = open_nvml(f"fake:{profile}")
    gpus = nvml.devices()
    gpus = (dataclasses.replace(gpus[0], lost=True), *gpus[1:])
    owner = {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "u"}
    validator = _validator()
    objects = gpu_devices.gpu_device_objects("node-a", nvml.system(), gpus, [owner])
    assert objects
    for obj in objects:
        assert [e.message for e in validator.iter_errors(obj)] == []


def test_the_schema_rejects_what_the_agent_never_writes() -> None:
    nvml = open_nvml("fake:t4-1x")
    good = gpu_devices.gpu_device_object("node-a", nvml.system(), nvml.devices()[0])
    validator = _validator()
    unknown = copy.deepcopy(good)
    unknown["spec"]["temperature"] = 40
    no_node = copy.deepcopy(good)
    del no_node["spec"]["nodeName"]
    bad_mode = copy.deepcopy(good)
    bad_mode["status"]["mig"]["mode"] = "on"
    bad_capability = copy.deepcopy(good)
    bad_capability["spec"]["computeCapability"] = "Turing"
    for broken in (unknown, no_node, bad_mode, bad_capability):
        assert list(validator.iter_errors(broken)), broken
