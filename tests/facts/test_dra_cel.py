"""CEL selectors: parsed by a real CEL parser, checked against the driver's attributes, evaluated like Kubernetes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpu_operator.facts.dra_cel import (
    CelError,
    Quantity,
    Reference,
    SemVer,
    check_expression,
    evaluate,
    parse_quantity,
    references,
)
from gpu_operator.facts.dra_driver import DEVICE_CLASSES, DEVICES

GPU = [DEVICES["gpu"]]
DEVICE = {
    "driver": "gpu.nvidia.com",
    "attributes": {
        "gpu.nvidia.com": {"type": "gpu", "productName": "NVIDIA H100 80GB HBM3", "driverVersion": SemVer("580.95.5")},
        "resource.kubernetes.io": {"pcieRoot": "pci0000:00"},
    },
    "capacity": {"gpu.nvidia.com": {"memory": Quantity(81559 << 20)}},
}


def test_references_in_dot_index_and_has_forms() -> None:
    expression = ("has(device.attributes['gpu.nvidia.com'].productName) && "
                  "device.attributes['resource.kubernetes.io']['pcieRoot'] == 'pci0000:00' && "
                  "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('1Gi')) > 0")
    assert references(expression) == [
        Reference("attributes", "gpu.nvidia.com", "productName"),
        Reference("attributes", "resource.kubernetes.io", "pcieRoot"),
        Reference("capacity", "gpu.nvidia.com", "memory"),
    ]


@pytest.mark.parametrize("cls", DEVICE_CLASSES, ids=lambda c: c.name)
def test_the_charts_own_class_expressions_pass_the_check(cls) -> None:
    assert check_expression(cls.expression, [cls.facts]) == []


@pytest.mark.parametrize("expression, wanted", [
    ("device.attributes['gpu.nvidia.com'].productname == 'x'", "'gpu.nvidia.com/productname'"),
    ("device.attributes['nvidia.com'].productName == 'x'", "'nvidia.com/productName'"),
    ("device.attributes['gpu.nvidia.com'].minor == 0", "removed in driver v25.8"),
    ("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", "on gpu devices"),
    ("device.capacity['gpu.nvidia.com'].memorySize.isGreaterThan(quantity('1'))", "capacity"),
    ("device.attribute['gpu.nvidia.com'].uuid == 'x'", "device has no field 'attribute'"),
    ("gpu.uuid == 'x'", "one variable, device"),
    ("device.attributes['gpu.nvidia.com'].uuid == ", "is not valid CEL"),
    ("device.attributes['gpu.nvidia.com'].uuid == 'x", "is not valid CEL"),
])
def test_problems(expression: str, wanted: str) -> None:
    problems = check_expression(expression, GPU)
    assert len(problems) == 1 and wanted in problems[0], problems


def test_a_mig_profile_is_fine_on_mig_devices_and_memory_slices_are_capacities() -> None:
    assert check_expression("device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && "
                            "device.capacity['gpu.nvidia.com'].memorySlice3.compareTo(quantity('1')) == 0",
                            [DEVICES["mig"]]) == []


def test_evaluation_with_quantities_versions_and_string_extensions() -> None:
    assert evaluate("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80G')) >= 0", DEVICE)
    assert not evaluate("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0", DEVICE)
    assert evaluate("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('580.0.0'))", DEVICE)
    assert evaluate("device.attributes['gpu.nvidia.com'].driverVersion.major() == 580", DEVICE)
    assert evaluate("device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')", DEVICE)
    assert not evaluate("device.attributes['gpu.nvidia.com'].type == 'mig'", DEVICE)


def test_a_missing_attribute_is_an_evaluation_error_not_a_match() -> None:
    with pytest.raises(CelError, match="profile"):
        evaluate("device.attributes['gpu.nvidia.com'].profile == '1g.10gb'", DEVICE)


def test_a_non_boolean_result_is_an_error() -> None:
    with pytest.raises(CelError, match="not a boolean"):
        evaluate("device.attributes['gpu.nvidia.com'].productName", DEVICE)


@pytest.mark.parametrize("text, value", [
    ("80Gi", Decimal(80 << 30)), ("80G", Decimal(80 * 10**9)), ("500m", Decimal("0.5")), ("1e3", Decimal(1000)),
    ("1.5Ki", Decimal(1536)), ("7", Decimal(7)),
])
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["80GB", "", "Gi", "1.2.3"])
def test_bad_quantities(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)


def test_semantic_versions_compare_numerically() -> None:
    assert SemVer("580.95.5").compare(SemVer("580.9.50")) == 1
    with pytest.raises(ValueError, match="semantic version"):
        SemVer("580.95.05")


@pytest.mark.parametrize(("expression", "found"), [
    ("'x'", "string"),
    ("1", "int"),
    ("device.capacity['gpu.nvidia.com'].memory", "kubernetes.Quantity"),
    ("quantity('80Gi')", "kubernetes.Quantity"),
    ("device.attributes['gpu.nvidia.com'].productName.lowerAscii()", "string"),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi'))", "int"),
])
def test_a_selector_of_another_fixed_type_than_bool_is_refused(expression: str, found: str) -> None:
    """k8s.io/dynamic-resource-allocation v0.34 cel/compile.go `CompileCELExpression`: the output type must be
    bool or dyn ("must evaluate to bool or the unknown type"), so the API server refuses the claim."""
    assert check_expression(expression, GPU) == [
        f"is refused by the API server: must evaluate to bool or the unknown type, not {found}; a selector is a "
        "condition, e.g. a comparison with ==, or a call such as isGreaterThan"]


@pytest.mark.parametrize("expression", [
    "true", "!false", "device.attributes['gpu.nvidia.com'].productName",  # an attribute is dyn: checked at run time
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))",
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
    "device.driver == 'gpu.nvidia.com' || false",
])
def test_bool_and_dyn_selectors_pass_the_output_type_rule(expression: str) -> None:
    assert check_expression(expression, GPU) == []
