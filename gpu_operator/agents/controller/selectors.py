"""Kubernetes label selectors in their string form (`app=job,tier!=web,env in (a,b),!legacy`), matched locally.

`upgradePolicy.waitForCompletion.podSelector` and `drain.podSelector` are such strings. The controller already
holds a node's pods (one list by `spec.nodeName`), so it matches them here instead of sending one more list per
selector. The grammar is the API server's: requirements separated by commas; `=`, `==`, `!=`, `in`, `notin`,
a bare key (exists) and `!key` (does not exist). An empty selector matches everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["SelectorError", "matches", "parse_selector"]

_SET = re.compile(r"^\s*([^\s!=,()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s,()]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*$")
Requirement = tuple[str, str, frozenset[str]]


class SelectorError(ValueError):
    pass


def _split(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _requirement(text: str) -> Requirement:
    if found := _SET.match(text):
        values = frozenset(v.strip() for v in found.group(3).split(",") if v.strip())
        return found.group(1), found.group(2), values
    if found := _EQUALITY.match(text):
        return found.group(1), "!=" if found.group(2) == "!=" else "=", frozenset({found.group(3)})
    if found := _EXISTS.match(text):
        return found.group(2), "!" if found.group(1) else "exists", frozenset()
    raise SelectorError(f"{text.strip()!r} is not a label selector requirement (key=value, key!=value, "
                        "key in (a,b), key notin (a,b), key or !key)")


@lru_cache(maxsize=64)
def parse_selector(text: str) -> tuple[Requirement, ...]:
    """The requirements of a selector string; SelectorError on a malformed one."""
    if not text.strip():
        return ()
    return tuple(_requirement(part) for part in _split(text))


_TESTS = {
    "=": lambda labels, key, values: labels.get(key) in values,
    "!=": lambda labels, key, values: labels.get(key) not in values,
    "in": lambda labels, key, values: labels.get(key) in values,
    "notin": lambda labels, key, values: labels.get(key) not in values,
    "exists": lambda labels, key, values: key in labels,
    "!": lambda labels, key, values: key not in labels,
}


def matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Whether `labels` satisfy every requirement of `selector`."""
    return all(_TESTS[op](labels, key, values) for key, op, values in parse_selector(selector))
