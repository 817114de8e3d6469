"""Addressing keys inside nested documents, merging mappings the way Helm does, and renaming problem paths.

Both importers build our config document key by key from someone else's vocabulary (Helm values, a ClusterPolicy
manifest). They write with dotted paths (`operator.driver.rdma.enabled`), merge a user's mapping over the default
mapping at the same place (Helm's coalescing: nested mappings merge, lists and scalars replace, `null` deletes),
and, when validation finds a problem, report it under the key the user actually wrote.
"""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Iterable, Mapping, Sequence

from gpu_operator.config.errors import Problem

__all__ = [
    "MISSING", "get_path", "set_path", "has_path", "merge_over", "is_empty", "rename_problems", "described",
]

#: Marks "no such key" (None is a value in YAML).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


def _parts(path: str) -> list[str]:
    return path.split(".") if path else []


def get_path(document: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, or MISSING."""
    node: Any = document
    for part in _parts(path):
        if not isinstance(node, Mapping) or part not in node:
            return MISSING
        node = node[part]
    return node


def has_path(document: Mapping[str, Any], path: str) -> bool:
    return get_path(document, path) is not MISSING


def set_path(document: dict[str, Any], path: str, value: Any) -> bool:
    """Write a value at a dotted path, creating mappings on the way (a null parent counts as absent).

    Nothing is written, and False returned, when a parent holds something other than a mapping: validation
    reports that value, and the write would hide it.
    """
    *parents, leaf = _parts(path)
    node = document
    for part in parents:
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            return False
    node[leaf] = value
    return True


def merge_over(default: Any, value: Any) -> Any:
    """Helm's coalescing of a user value over a default: mappings merge, `None` drops a key, the rest replaces."""
    if not (isinstance(default, Mapping) and isinstance(value, Mapping)):
        return copy.deepcopy(value)
    merged = copy.deepcopy(dict(default))
    for key, item in value.items():
        if item is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_over(merged.get(key), item)
    return merged


def is_empty(value: Any) -> bool:
    """Go template truthiness: nil, false, 0, "" and empty collections are empty."""
    if value is None or isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, (str, Mapping, list, tuple)):
        return len(value) == 0
    return False


def _rename(path: str, renames: Sequence[tuple[str, str]]) -> str:
    for ours, theirs in renames:
        if path == ours:
            return theirs
        if path.startswith(ours) and path[len(ours)] in ".[":
            return theirs + path[len(ours):]
    return path


def rename_problems(problems: Iterable[Problem], renames: Iterable[tuple[str, str]]) -> list[Problem]:
    """Report problems under the user's key names: the longest matching document prefix is replaced."""
    ordered = sorted(renames, key=lambda pair: len(pair[0]), reverse=True)
    return [Problem(_rename(p.path, ordered), p.message) for p in problems]


def described(value: Any) -> str:
    """A value as the user wrote it in YAML, for error messages (never a Python type name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"the number {value}" if isinstance(value, (int, float)) else "a value of another kind"
