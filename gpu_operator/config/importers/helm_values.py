"""Import a GPU Operator Helm `values.yaml` as our config document.

The values are read as `helm install` would read them with the v26.7.0 chart: merged over the chart's defaults
(our model defaults are those defaults, so a file that only sets `mig.strategy` leaves everything else at the
chart default), then mapped into the ClusterPolicy spec the way the chart's template maps them. Every key is
either mapped, rejected with a fix, or ignored for a documented reason (:mod:`.helm_keys`); an unknown key is an
error, with a migration hint when an older chart had it (:mod:`.helm_migrations`), so the full values files of
charts v22.9 and later import. A string still holding template syntax (`${...}`, `{{ ... }}`) is refused.
Problems found while validating the resulting document are reported under the values key they come from.

```python
document = import_helm_values(yaml.safe_load(open("values.yaml")))
```
"""

from __future__ import annotations

from functools import cache
from typing import Any
from collections.abc import Mapping

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.importers.cr_defaults import absent_defaults
from gpu_operator.config.importers.helm_keys import HELM_RENAMES, HELM_RULES, ignored_keys
from gpu_operator.config.importers.helm_migrations import UMBRELLA_KEY, removed_key_hint, umbrella_hint
from gpu_operator.config.importers.helm_rules import Copy, Handle, Ignore, Reject, Rule, Translation
from gpu_operator.config.importers.paths import MISSING, described, get_path, is_empty, merge_over, rename_problems
from gpu_operator.config.importers.template_syntax import template_problems
from gpu_operator.config.loader import parse_config

__all__ = ["import_helm_values", "ignored_helm_values", "SOURCE"]

SOURCE = "Helm values"


@cache
def _branches() -> frozenset[str]:
    """Every values key that has rules below it (the root is "")."""
    found = {""}
    for key in HELM_RULES:
        parts = key.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(found)


@cache
def _chart_defaults() -> dict[str, Any]:
    return GpuStackConfig().to_document()


def _quoted(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else value


def _copy(t: Translation, key: str, rule: Copy, value: Any) -> None:
    if rule.default is not MISSING and is_empty(value):
        value = rule.default
    if value is None and rule.when == "always":
        t.problem(key, "null deletes the chart's value and leaves the field unset; set a value, or remove the key "
                       "to keep the chart default")
        return
    if isinstance(value, Mapping):
        default = get_path(t.defaults, rule.target)
        value = merge_over(default if isinstance(default, Mapping) else {}, value)
    if not (rule.when == "set" and is_empty(value)):
        t.write(rule.target, _quoted(value) if rule.quote else value)
    # what the template leaves out of the ClusterPolicy gets NVIDIA's default for an absent field
    for path, absent in absent_defaults(t.document, under=rule.target):
        t.write(path, absent)


def _apply(t: Translation, key: str, rule: Rule, value: Any) -> None:
    if isinstance(rule, Copy):
        _copy(t, key, rule, value)
    elif isinstance(rule, Reject):
        if not rule.accepts(value):
            t.problem(key, rule.message)
    elif isinstance(rule, Handle):
        rule.translate(t, key, value)


def _walk(t: Translation, key: str, value: Any, ignored: bool) -> None:
    rule = HELM_RULES.get(key)
    is_branch = key in _branches()
    if rule is not None and not (isinstance(rule, Ignore) and is_branch):
        _apply(t, key, rule, value)
        return
    if not is_branch:
        if not ignored:
            t.problem(key, _unknown_key(key))
        return
    ignored = ignored or isinstance(rule, Ignore)
    if value is None:
        if not ignored:
            t.problem(key, "null deletes every chart default in this block; remove the key, or set the values you want")
        return
    if not isinstance(value, Mapping):
        t.problem(key or "<root>", f"must be a mapping, got {described(value)}")
        return
    for name, item in value.items():
        child = f"{key}.{name}" if key else str(name)
        if "." in str(name):
            t.problem(child, "unknown key: values keys contain no dots (nest the mapping instead)")
            continue
        _walk(t, child, item, ignored)


def _unknown_key(key: str) -> str:
    hint = removed_key_hint(key) or umbrella_hint(key)
    if hint is not None:
        return f"not a value of the GPU Operator v26.7.0 chart: {hint}"
    return "unknown key: the GPU Operator v26.7.0 chart has no such value (check the spelling)"


def _with_hint(problem: Problem) -> Problem:
    """A key inside a copied block that an older chart had: say where it went rather than "check the spelling"."""
    hint = removed_key_hint(problem.path)
    if hint is None or not problem.message.startswith("unknown key"):
        return problem
    return Problem(problem.path, _unknown_key(problem.path))


def _deduplicate(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))


def import_helm_values(values: Mapping[str, Any], namespace: str = "gpu-operator") -> dict[str, Any]:
    """Our config document for a GPU Operator Helm values file; ConfigError lists every problem."""
    if not isinstance(values, Mapping):
        raise ConfigError([Problem("", f"Helm values must be a mapping, got {described(values)}")], SOURCE)
    if isinstance(values.get(UMBRELLA_KEY), Mapping):
        raise ConfigError([Problem(UMBRELLA_KEY, str(umbrella_hint(UMBRELLA_KEY)))], SOURCE)
    placeholders = template_problems(values)
    if placeholders:
        raise ConfigError(placeholders, SOURCE)
    t = Translation(values=values, defaults=_chart_defaults())
    t.write("namespace", namespace)
    _walk(t, "", values, ignored=False)
    problems = list(t.problems)
    try:
        parse_config(t.document, source=SOURCE)
    except ConfigError as error:
        problems += [_with_hint(p) for p in rename_problems(error.problems, HELM_RENAMES)]
    if problems:
        raise ConfigError(_deduplicate(problems), SOURCE)
    return t.document


def ignored_helm_values(values: Mapping[str, Any]) -> dict[str, str]:
    """The keys of a values file that have no effect here, each with the reason (for notes to the user)."""
    reasons = ignored_keys()
    found: dict[str, str] = {}

    def visit(key: str, value: Any) -> None:
        # an empty value (`false`, `[]`, `""`) asks for nothing, here as with the chart: nothing to explain
        if key in reasons and not is_empty(value):
            found[key] = reasons[key]
        rule = HELM_RULES.get(key)
        if isinstance(rule, Handle) and rule.note is not None:
            reason = rule.note(value)
            if reason is not None:
                found[key] = reason
        if key in _branches() and isinstance(value, Mapping):
            for name, item in value.items():
                visit(f"{key}.{name}" if key else str(name), item)

    visit("", values)
    return found
