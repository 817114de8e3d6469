"""Kubernetes label selectors in their text form, parsed and matched as apimachinery's `labels.Parse` does.

The drain settings give pod selectors as text: the driver manager's `DRAIN_POD_SELECTOR_LABEL`, the controller's
`upgradePolicy.waitForCompletion.podSelector` and `drain.podSelector`, and the Network Operator's OFED
`upgradePolicy.drain.podSelector`. NVIDIA hands them to kubectl's drain helper, which parses them with
`labels.Parse` (k8s.io/apimachinery pkg/labels/selector.go `Parser.parse`, `NewRequirement`): comma-separated
requirements, each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`,
`key>1` or `key<1`. Keys must be qualified names and values label values (:mod:`gpu_operator.facts.kube_names`);
`in ()` and `key=` mean the empty value; `>`/`<` take one integer. A pod matches when it meets every requirement;
`!=` and `notin` also match a pod without the key, and `>`/`<` only a pod whose value is an integer. The empty
selector matches every pod.

The agents match the pods they hold here, and config reads the same strings with the same parser, so a typo is
refused at `pulumi preview` rather than draining the wrong pods on the node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.facts.kube_names import label_value_problem, qualified_name_problem

__all__ = ["LabelSelector", "Requirement", "parse_selector"]

#: Symbols of the selector grammar, two-character ones first (the lexer takes the longest).
_SYMBOLS = ("!=", "==", "=", "!", "(", ")", ",", ">", "<")
_SYMBOL_CHARS = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_KEYWORDS = {"in": "in", "notin": "notin"}
#: The binary operators after a key, as `Requirement.op` names them.
_OPERATORS = {"=": "in", "==": "in", "!=": "notin", "in": "in", "notin": "notin", ">": "gt", "<": "lt"}
_END = ("end", "end of string")
_INT64 = (-(2**63), 2**63 - 1)
_DECIMAL = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Requirement:
    """One requirement: `op` is exists, !exists, in, notin, gt or lt (`=`/`==` are `in` one value, `!=` `notin`)."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op in ("gt", "lt"):
            return present and _compares(labels[self.key], self.op, next(iter(self.values)))
        return {
            "exists": present,
            "!exists": not present,
            "in": present and labels.get(self.key) in self.values,
            "notin": not present or labels.get(self.key) not in self.values,
        }[self.op]


def _integer(text: str) -> int | None:
    """Go's `strconv.ParseInt(text, 10, 64)`: an optional sign and ASCII digits, within int64."""
    if not _DECIMAL.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64[0] <= number <= _INT64[1] else None


def _compares(value: str, op: str, bound: str) -> bool:
    number, limit = _integer(value), _integer(bound)
    if number is None or limit is None:
        return False
    return number > limit if op == "gt" else number < limit


@dataclass(frozen=True)
class LabelSelector:
    """Requirements that must all hold; the text it was parsed from is kept for messages."""

    text: str
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, literal) tokens: `id` for identifiers, the symbol or keyword itself otherwise, then `end`."""
    tokens: list[tuple[str, str]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char in _WHITESPACE:
            index += 1
        elif char in _SYMBOL_CHARS:
            symbol = next(s for s in _SYMBOLS if text.startswith(s, index))
            tokens.append((symbol, symbol))
            index += len(symbol)
        else:
            end = index
            while end < len(text) and text[end] not in _WHITESPACE and text[end] not in _SYMBOL_CHARS:
                end += 1
            word = text[index:end]
            tokens.append((_KEYWORDS.get(word, "id"), word))
            index = end
    tokens.append(_END)
    return tokens


class _Parser:
    """`labels.Parser`: in a value position the keywords `in` and `notin` are plain identifiers."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.position = 0

    def peek(self, *, values: bool = True) -> tuple[str, str]:
        kind, literal = self.tokens[self.position]
        return ("id", literal) if values and kind in ("in", "notin") else (kind, literal)

    def take(self, *, values: bool = True) -> tuple[str, str]:
        token = self.peek(values=values)
        self.position += 1
        return token

    def selector(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self.peek()
            if kind == "end" and not requirements:
                return requirements
            if kind not in ("id", "!"):
                raise ValueError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            requirements.append(self.requirement())
            kind, literal = self.take()
            if kind == "end":
                return requirements
            if kind != ",":
                raise ValueError(f"found '{literal}', expected: ',' or 'end of string'")
            if self.peek()[0] not in ("id", "!"):
                raise ValueError(f"found '{self.peek()[1]}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        kind, literal = self.take()
        negated = kind == "!"
        if negated:
            kind, literal = self.take()
        if kind != "id":
            raise ValueError(f"found '{literal}', expected: identifier")
        key = _checked_key(literal)
        if negated or self.peek()[0] in ("end", ","):
            return Requirement(key, "!exists" if negated else "exists")
        kind, literal = self.take(values=False)
        if kind not in _OPERATORS:
            raise ValueError(f"found '{literal}', expected: {', '.join(_OPERATORS)}")
        values = self.set_values() if kind in ("in", "notin") else (self.exact_value(),)
        return _requirement(key, _OPERATORS[kind], values)

    def set_values(self) -> tuple[str, ...]:
        kind, literal = self.take()
        if kind != "(":
            raise ValueError(f"found '{literal}' expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            kind, literal = self.take()
            if kind == ")":
                return tuple(values + ([""] if expect_value else []))
            if kind == "," and expect_value:
                values.append("")
            elif kind == "," or (kind == "id" and expect_value):
                if kind == "id":
                    values.append(literal)
                expect_value = kind == ","
            else:
                raise ValueError(f"found '{literal}', expected: ',', ')' or identifier")

    def exact_value(self) -> str:
        kind, literal = self.peek()
        if kind in ("end", ","):
            return ""
        self.take()
        if kind != "id":
            raise ValueError(f"found '{literal}', expected: identifier")
        return literal


def _checked_key(key: str) -> str:
    problem = qualified_name_problem(key)
    if problem is not None:
        raise ValueError(f"key {problem}")
    return key


def _requirement(key: str, op: str, values: tuple[str, ...]) -> Requirement:
    for value in values:
        problem = label_value_problem(value)
        if problem is not None:
            raise ValueError(f"the value of {key!r}: {problem}")
    if op in ("gt", "lt") and _integer(values[0]) is None:
        raise ValueError(f"value {values[0]!r} of {key!r}: '>' and '<' compare with an integer")
    return Requirement(key, op, frozenset(values))


def parse_selector(text: str) -> LabelSelector:
    """The selector `text` means; raises ValueError naming the part it cannot read."""
    return LabelSelector(text, tuple(_Parser(text).selector()))
