"""ClusterPolicySpec against the upstream CRD (nvidia.com_clusterpolicies.yaml, v26.7.0).

The `operator` section accepts a ClusterPolicy spec verbatim, so its field tree (by alias) must be the CRD's, and
every default, enum and minimum the CRD declares must be accepted (or enforced) by our models.
"""

from __future__ import annotations

from functools import cache
from typing import Any, get_args
from collections.abc import Iterator

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from gpu_operator.config import ClusterPolicySpec
from tests.support.reference import reference_file

Path = tuple[str | int, ...]

#: CRD defaults the chart (and so our model) deliberately overrides: path → (CRD default, our default)
CHART_OVERRIDES = {("driver", "upgradePolicy", "autoUpgrade"): (False, True)}
#: Keys of ours beside the ClusterPolicy's (not in the CRD, never written into a ClusterPolicy)
EXTENSIONS = frozenset({"driver.rollout"})


@cache
def _crd_spec() -> dict[str, Any]:
    crd = yaml.safe_load(reference_file("crds/nvidia.com_clusterpolicies.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (`X | None`, `tuple[X, ...]`, `dict[str, X]`), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _crd_tree(node: dict[str, Any]) -> dict[str, Any] | None:
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        return _crd_tree(node["items"])
    properties = node.get("properties")
    return {key: _crd_tree(child) for key, child in properties.items()} if properties else None


def _model_tree(model: type[BaseModel]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        nested = _nested_model(field.annotation)
        tree[field.alias or name] = _model_tree(nested) if nested else None
    return tree


def _differences(crd: dict[str, Any] | None, ours: dict[str, Any] | None, path: str = "") -> Iterator[str]:
    for key in sorted(set(crd or {}) | set(ours or {})):
        where = f"{path}.{key}" if path else key
        if key not in (ours or {}):
            yield f"{where}: in the CRD, missing from our model"
        elif key not in (crd or {}):
            yield f"{where}: in our model, not in the CRD"
        elif (crd[key] is None) != (ours[key] is None):
            yield f"{where}: an object on one side, a value on the other"
        elif crd[key] is not None:
            yield from _differences(crd[key], ours[key], where)


def _constraints(node: dict[str, Any], path: Path = ()) -> Iterator[tuple[Path, str, Any]]:
    for keyword in ("default", "enum", "minimum"):
        if keyword in node:
            yield path, keyword, node[keyword]
    for key, child in (node.get("properties") or {}).items():
        yield from _constraints(child, (*path, key))
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        yield from _constraints(node["items"], (*path, 0))


def _document(path: Path, value: Any) -> Any:
    for part in reversed(path):
        value = [value] if part == 0 else {part: value}
    return value


def _accepts(path: Path, value: Any) -> bool:
    try:
        ClusterPolicySpec.model_validate(_document(path, value))
    except ValidationError:
        return False
    return True


def _field(path: Path) -> FieldInfo:
    """The model field at a CRD path (list items are stepped through)."""
    model: type[BaseModel] | None = ClusterPolicySpec
    field: FieldInfo | None = None
    for part in (p for p in path if p != 0):
        assert model is not None, f"{path}: no model above {part}"
        by_alias = {f.alias or name: f for name, f in model.model_fields.items()}
        field = by_alias[part]
        model = _nested_model(field.annotation)
    assert field is not None
    return field


def test_field_tree_is_the_crds() -> None:
    differences = list(_differences(_crd_tree(_crd_spec()), _model_tree(ClusterPolicySpec)))
    assert differences == [f"{key}: in our model, not in the CRD" for key in sorted(EXTENSIONS)]


def test_crd_defaults_are_accepted_and_are_ours_unless_the_chart_overrides_them() -> None:
    defaults = [(path, value) for path, keyword, value in _constraints(_crd_spec()) if keyword == "default"]
    assert len(defaults) > 20
    rejected = [path for path, value in defaults if not _accepts(path, value)]
    assert rejected == []
    differing = {
        path: (value, _field(path).default) for path, value in defaults
        if _field(path).default != value and path not in CHART_OVERRIDES
    }
    assert differing == {}
    for path, (crd_default, ours) in CHART_OVERRIDES.items():
        assert (dict(defaults)[path], _field(path).default) == (crd_default, ours)


def test_every_crd_enum_value_is_accepted_and_nothing_else() -> None:
    enums = [(path, values) for path, keyword, values in _constraints(_crd_spec()) if keyword == "enum"]
    assert {p for p, _ in enums} >= {("mig", "strategy"), ("driver", "kernelModuleType"), ("sandboxWorkloads", "mode")}
    rejected = [(path, value) for path, values in enums for value in values if not _accepts(path, value)]
    assert rejected == []
    accepted_outsider = [path for path, _ in enums if _accepts(path, "not-in-the-enum")]
    assert accepted_outsider == []


def _minimums() -> list[tuple[Path, int]]:
    return [(path, value) for path, keyword, value in _constraints(_crd_spec()) if keyword == "minimum"]


def test_crd_minimums_are_enforced() -> None:
    minimums = _minimums()
    assert len(minimums) >= 17
    assert [path for path, value in minimums if not _accepts(path, value)] == []
    assert [path for path, value in minimums if _accepts(path, value - 1)] == []



