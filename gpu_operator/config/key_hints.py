"""What an unknown key should have been: the keys of its own section, and the nearest of them.

pydantic reports an unknown key with its location only. The section it sits in is found by walking the config
models along that location (a field's alias to its model, a list index or a map key to the item's model), so the
message can list the keys that section takes and offer the nearest (:mod:`gpu_operator.config.suggestions`). A
ClusterPolicy section written at the top of the document (`driver:` beside `operator:`, as in NVIDIA's Helm values)
is told where it belongs.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gpu_operator.config.suggestions import nearest

__all__ = ["annotation_types", "section_keys", "section_model", "unknown_key_message"]


def annotation_types(annotation: Any) -> list[Any]:
    """The annotation with Annotated, Optional and unions unwrapped: the types a value may take."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return annotation_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [found for arg in typing.get_args(annotation) for found in annotation_types(arg)]
    return [annotation]


def _step(annotation: Any, part: str | int) -> Any | None:
    """The type one location step leads to: a model's field, a tuple's item, a map's value."""
    for option in annotation_types(annotation):
        origin, args = typing.get_origin(option), typing.get_args(option)
        if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(part, str):
            for name, field in option.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
        elif origin in (tuple, list) and isinstance(part, int) and args:
            return args[0]
        elif origin is dict and isinstance(part, str) and len(args) == 2:
            return args[1]
    return None


def section_model(root: type[BaseModel], location: Sequence[str | int]) -> type[BaseModel] | None:
    """The model of the section at `location` below `root` (None where the location leaves the models)."""
    current: Any = root
    for part in location:
        current = _step(current, part)
        if current is None:
            return None
    found = [option for option in annotation_types(current) if isinstance(option, type) and issubclass(option, BaseModel)]
    return found[0] if found else None


def section_keys(model: type[BaseModel]) -> list[str]:
    """The keys a section takes, as the document writes them."""
    return [field.alias or name for name, field in model.model_fields.items()]


def unknown_key_message(root: type[BaseModel], location: Sequence[str | int], where: str) -> str | None:
    """`unknown key; did you mean 'version'? operator.driver takes: ...` for the key at the end of `location`
    (`where` is the section's path as messages write it); None when the section cannot be found."""
    key = location[-1]
    model = section_model(root, location[:-1])
    if model is None or not isinstance(key, str):
        return None
    keys = section_keys(model)
    if not location[:-1]:
        operator = section_model(root, ["operator"])
        if operator is not None and key in section_keys(operator):
            return (f"unknown key at the top of the document: {key} is a ClusterPolicy section, which goes under "
                    f"operator: (operator.{key}); the top level takes: {', '.join(keys)}")
    found = nearest(key, keys)
    hint = f"did you mean {found!r}? " if found is not None else ""
    section = f"{where} takes" if where else "the top level takes"
    return f"unknown key; {hint}{section}: {', '.join(keys)}"
