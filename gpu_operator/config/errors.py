"""One error for a bad config, listing every problem with the path of the offending key.

A person fixing a config wants the whole list at once (`operator.devicePlugin.config.name: ...`), not one
problem per run. Paths use the document's camelCase keys and `[i]` for list items. Given the model a document
was validated against, an unknown key's message lists the keys of its section and the nearest of them
(:mod:`gpu_operator.config.key_hints`); a value outside a fixed set of words offers the nearest word; and a text
holding a letter that only looks like an ASCII one says which (:mod:`gpu_operator.config.suggestions`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ValidationError

from gpu_operator.config.key_hints import unknown_key_message
from gpu_operator.config.suggestions import did_you_mean, lookalike_note

__all__ = ["Problem", "ConfigError", "problems_from_validation_error", "format_path"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config: where (`path`) and what, with the fix where there is one."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(ValueError):
    """A config failed validation; `problems` lists every problem found."""

    def __init__(self, problems: Sequence[Problem], source: str = "config") -> None:
        self.problems = tuple(problems)
        self.source = source
        count = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in {source}:\n{lines}")


def format_path(parts: Iterable[str | int]) -> str:
    """`("operator", "env", 0, "name")` → `operator.env[0].name`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


#: pydantic error types whose own text names Python types (`tuple`, a model class): the document's words instead.
_SHAPES: dict[str, str] = {
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "set_type": "must be a list",
    "frozen_set_type": "must be a list",
    "string_type": "must be a string",
    "bool_type": "must be a boolean (true or false, unquoted)",
    "int_type": "must be a whole number, unquoted",
}


#: Patterns of string fields, in words (a regular expression is no fix for a person).
_PATTERN_WORDS: dict[str, str] = {
    r"^(([0-9]+)(y|w|d|h|m|s|ms))+$": "a Prometheus duration: numbers with units y, w, d, h, m, s or ms, such as "
                                       "'5m' or '1h30m'",
}

#: YAML reads `22.04`, `1.10` or `yes` unquoted as a number or a boolean, and `1.10` comes back as 1.1.
_QUOTE_IT = "; quote the value as you wrote it (YAML read it as a number or a boolean)"


def _described(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return repr(value)


_QUOTED = re.compile(r"'([^']*)'")


def _hinted(error: dict, message: str) -> str:
    """The message with the nearest allowed word (for a fixed set of words) or a look-alike letter named."""
    given = error.get("input")
    if not isinstance(given, str):
        return message
    if error["type"] == "literal_error":
        hint = did_you_mean(given, _QUOTED.findall(str(error.get("ctx", {}).get("expected", ""))))
    else:
        note = lookalike_note(given)
        hint = f"({note})" if note is not None and note not in message else ""
    return f"{message}; {hint}" if hint else message


def _message(error: dict) -> str:
    return _hinted(error, _plain_message(error))


def _plain_message(error: dict) -> str:
    kind, message = error["type"], error["msg"]
    if kind in _SHAPES:
        given = error.get("input")
        fix = _QUOTE_IT if kind == "string_type" and isinstance(given, (bool, int, float)) else ""
        return f"{_SHAPES[kind]}, got {_described(given)}{fix}"
    if kind in ("too_short", "too_long"):
        bound = error.get("ctx", {}).get("min_length" if kind == "too_short" else "max_length")
        items = "item" if bound == 1 else "items"
        return f"must list at {'least' if kind == 'too_short' else 'most'} {bound} {items}"
    if kind == "string_pattern_mismatch" and error.get("ctx", {}).get("pattern") in _PATTERN_WORDS:
        return f"{error.get('input')!r} is not {_PATTERN_WORDS[error['ctx']['pattern']]}"
    if kind == "extra_forbidden":
        return "unknown key (check the spelling; keys are camelCase)"
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    if kind == "assertion_error":
        return message.removeprefix("Assertion failed, ")
    given = error.get("input")
    if isinstance(given, (str, int, float, bool)) and kind not in ("missing",):
        return f"{message} (got {given!r})"
    return message


def problems_from_validation_error(error: ValidationError, prefix: Sequence[str | int] = (),
                                   model: type[BaseModel] | None = None) -> list[Problem]:
    """Turn pydantic's errors into Problems; union branches that pydantic tags onto the path are dropped. With the
    `model` validated, an unknown key's message names its section's keys."""
    problems: list[Problem] = []
    for item in error.errors():
        if _is_key_error(item):
            problems.append(_key_problem(item, prefix))
            continue
        loc = [part for part in item["loc"] if not _is_union_tag(part)]
        message = None
        if item["type"] == "extra_forbidden" and model is not None and loc:
            message = unknown_key_message(model, loc, format_path([*prefix, *loc[:-1]]))
            note = lookalike_note(str(loc[-1]))
            if message is not None and note is not None and note not in message:
                message = f"{message} ({note})"
        path = format_path([*prefix, *loc])
        if message is None and item["type"] == "extra_forbidden" and path.startswith("operator."):
            message = "unknown key (check the spelling; keys are camelCase as in the ClusterPolicy CRD)"
        problems.append(Problem(path, message or _message(item)))
    # a list left too short because its items were refused repeats those problems
    failed_items = {p.path.rsplit("[", 1)[0] for p in problems if p.path.endswith("]") or "[" in p.path}
    problems = [p for p in problems if not (p.message.startswith("must list at least") and p.path in failed_items)]
    return _deduplicate(problems)


#: what YAML made of an unquoted key, by Python type name
_YAML_KINDS = {"int": "a number", "float": "a number", "bool": "a boolean", "NoneType": "null", "date": "a date",
               "datetime": "a timestamp"}


def _is_key_error(error: dict) -> bool:
    # a mapping key that is not a string: at the top of a model ('invalid_key'), or in a dict field ('[key]')
    return error["type"] == "invalid_key" or (error["loc"][-1:] == ("[key]",) and error["type"] == "string_type")


def _key_problem(error: dict, prefix: Sequence[str | int]) -> Problem:
    """A non-string key: its path names the key as written (not as a list index), and the fix is to quote it."""
    loc = [part for part in error["loc"] if part != "[key]" and not _is_union_tag(part)]
    key = error.get("input")
    parent = format_path([*prefix, *loc[:-1]])
    written = _described(key)
    path = f"{parent}.{written}" if parent else written
    kind = _YAML_KINDS.get(type(key).__name__, "not a string")
    return Problem(path, f"the key {written} is read as {kind}, not a string; quote it ('{written}')")


def _is_union_tag(part: str | int) -> bool:
    # pydantic tags union members into the location: 'literal['all']', 'int', 'tuple[...]', 'function-after[...]'
    return isinstance(part, str) and ("[" in part or part in {"int", "str", "bool", "float"})


def _deduplicate(problems: list[Problem]) -> list[Problem]:
    seen: dict[str, list[Problem]] = {}
    for problem in problems:
        seen.setdefault(problem.path, []).append(problem)
    out: list[Problem] = []
    for path, group in seen.items():
        if len(group) == 1:
            out.extend(group)
        else:
            out.append(Problem(path, " or ".join(dict.fromkeys(p.message for p in group))))
    return out
