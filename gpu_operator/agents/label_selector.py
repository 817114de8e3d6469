"""Kubernetes label selectors in their text form, as the drain settings give them.

The driver manager's `DRAIN_POD_SELECTOR_LABEL` and the controller's `upgradePolicy.waitForCompletion.podSelector`
and `drain.podSelector` are such strings; both agents hold a node's pods already and match them here.

NVIDIA passes the variable to kubectl's drain helper, which parses it with `labels.Parse`: comma-separated
requirements, each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)` or `key notin (a,b)`.
A pod matches when it meets every requirement; `!=` and `notin` also match a pod without the key, as in
Kubernetes. The empty selector matches every pod. A malformed one is refused when the settings are read, so a typo
fails at start rather than draining the wrong pods.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["LabelSelector", "Requirement", "parse_selector"]

_KEY = r"[A-Za-z0-9](?:[A-Za-z0-9._/-]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
_EXISTS = re.compile(rf"^(?P<neg>!?)\s*(?P<key>{_KEY})$")
_EQUALITY = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})$")
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_SET_VALUE = re.compile(rf"^{_VALUE}$")


@dataclass(frozen=True)
class Requirement:
    """One requirement: `op` is one of exists, !exists, in, notin (`=`/`==` are `in` one value, `!=` `notin`)."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        return {
            "exists": present,
            "!exists": not present,
            "in": present and labels.get(self.key) in self.values,
            "notin": not present or labels.get(self.key) not in self.values,
        }[self.op]


@dataclass(frozen=True)
class LabelSelector:
    """Requirements that must all hold; the text it was parsed from is kept for messages."""

    text: str
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)


def _split(text: str) -> list[str]:
    """The requirements: commas split them except inside a set's parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ')'")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise ValueError("unbalanced '('")
    parts.append("".join(current))
    return [part.strip() for part in parts]


def _requirement(text: str) -> Requirement:
    if match := _SET.match(text):
        values = [value.strip() for value in match["values"].split(",")]
        if not all(_SET_VALUE.match(value) for value in values):
            raise ValueError(f"invalid value in {text!r}")
        return Requirement(match["key"], match["op"], frozenset(values))
    if match := _EQUALITY.match(text):
        return Requirement(match["key"], "notin" if match["op"] == "!=" else "in", frozenset({match["value"]}))
    if match := _EXISTS.match(text):
        return Requirement(match["key"], "!exists" if match["neg"] else "exists")
    raise ValueError(f"cannot parse requirement {text!r}")


def parse_selector(text: str) -> LabelSelector:
    """The selector `text` means; raises ValueError naming the part it cannot read."""
    if not text.strip():
        return LabelSelector(text)
    parts = _split(text)
    if any(not part for part in parts):
        raise ValueError("empty requirement")
    return LabelSelector(text, tuple(_requirement(part) for part in parts))
