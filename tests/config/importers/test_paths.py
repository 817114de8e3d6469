"""Document paths, Helm's coalescing of values, Go's notion of empty, and renaming problem paths."""

from __future__ import annotations

import pytest

from gpu_operator.config import Problem
from gpu_operator.config.importers.paths import MISSING, get_path, is_empty, merge_over, rename_problems, set_path


def test_get_and_set_paths() -> None:
    document: dict = {}
    assert set_path(document, "operator.driver.version", "1") is True
    assert document == {"operator": {"driver": {"version": "1"}}}
    assert get_path(document, "operator.driver.version") == "1"
    assert get_path(document, "operator.toolkit") is MISSING
    # a null parent is replaced, any other value is left for validation to report
    document["operator"]["dcgm"] = None
    assert set_path(document, "operator.dcgm.enabled", True) and document["operator"]["dcgm"] == {"enabled": True}
    document["operator"]["gfd"] = "on"
    assert set_path(document, "operator.gfd.enabled", True) is False and document["operator"]["gfd"] == "on"


def test_merge_over_is_helms_coalescing() -> None:
    default = {"enabled": True, "interval": "15s", "labels": {"a": "1"}, "list": [1, 2]}
    merged = merge_over(default, {"interval": None, "labels": {"b": "2"}, "list": [3]})
    assert merged == {"enabled": True, "labels": {"a": "1", "b": "2"}, "list": [3]}
    assert default["labels"] == {"a": "1"}  # the default is not changed
    assert merge_over(None, {"a": 1}) == {"a": 1}


@pytest.mark.parametrize("value, empty", [
    (None, True), (False, True), (0, True), (0.0, True), ("", True), ([], True), ({}, True),
    (True, False), (1, False), ("x", False), ([0], False), ({"a": None}, False),
])
def test_go_emptiness(value: object, empty: bool) -> None:
    assert is_empty(value) is empty


def test_rename_problems_uses_the_longest_prefix() -> None:
    renames = [
        ("operator.driver", "driver"),
        ("operator.driver.upgradePolicy.podDeletion", "driver.upgradePolicy.gpuPodDeletion"),
    ]
    problems = [
        Problem("operator.driver.upgradePolicy.podDeletion.force", "x"),
        Problem("operator.driver.env[0].name", "y"),
        Problem("operator.driverX", "z"),
        Problem("namespace", "w"),
    ]
    assert [p.path for p in rename_problems(problems, renames)] == [
        "driver.upgradePolicy.gpuPodDeletion.force", "driver.env[0].name", "operator.driverX", "namespace",
    ]
