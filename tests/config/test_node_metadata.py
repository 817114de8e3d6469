"""Node taints in AKS's text form, their tolerations, and the label rules pools are checked against."""

from __future__ import annotations

import pytest

from gpu_operator.config.node_metadata import (
    Taint,
    check_label_key,
    check_label_value,
    is_derived_label,
    parse_taint,
)


@pytest.mark.parametrize("text, taint, toleration", [
    ("sku=gpu:NoSchedule", Taint("sku", "gpu", "NoSchedule"),
     {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}),
    ("nvidia.com/gpu:NoExecute", Taint("nvidia.com/gpu", None, "NoExecute"),
     {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}),
    ("dedicated=:PreferNoSchedule", Taint("dedicated", "", "PreferNoSchedule"),
     {"key": "dedicated", "operator": "Equal", "value": "", "effect": "PreferNoSchedule"}),
])
def test_taints_parse_print_and_tolerate(text: str, taint: Taint, toleration: dict[str, str]) -> None:
    assert parse_taint(text) == taint
    assert taint.text == text
    assert taint.toleration == toleration


@pytest.mark.parametrize("text", ["sku=gpu", "sku=gpu:Maybe", ":NoSchedule", "a b=c:NoSchedule", "k=v v:NoSchedule"])
def test_malformed_taints_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_taint(text)


@pytest.mark.parametrize("key", ["team", "example.com/team", "a.b-c_d", "x" * 63])
def test_label_keys(key: str) -> None:
    assert check_label_key(key) == key


@pytest.mark.parametrize("key", ["", "-team", "Example.com/team", "a/b/c", "x" * 64, "example.com/"])
def test_bad_label_keys(key: str) -> None:
    with pytest.raises(ValueError):
        check_label_key(key)


def test_label_values() -> None:
    assert check_label_value("") == ""
    assert check_label_value("all-1g.10gb") == "all-1g.10gb"
    with pytest.raises(ValueError):
        check_label_value("a b")


@pytest.mark.parametrize("key, derived", [
    ("nvidia.com/gpu.present", True),
    ("nvidia.com/gpu.deploy.driver", True),
    ("nvidia.com/mig.config", True),
    ("nvidia.com/device-plugin.config", True),
    ("nvidia.com/gpu.workload.config", True),
    ("nvidia.com/gpu.product", False),
    ("team", False),
])
def test_derived_labels(key: str, derived: bool) -> None:
    assert is_derived_label(key) is derived
