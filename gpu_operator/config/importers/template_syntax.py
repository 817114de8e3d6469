"""Unrendered template syntax in a file to import: a value that was meant to be filled in and never was.

Values files and manifests are often produced by another tool (Helm, envsubst, Terraform, a CI job). When that step
was skipped or failed, a value still holds its placeholder: `${driver_version}`, `{{ .Values.driver.version }}`,
or Go's `<no value>` for a missing key. Imported as is, the placeholder would become part of an image tag, a
label or a path, and fail on the node, so every string in the file is checked before anything is translated.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Iterator, Mapping

from gpu_operator.config.errors import Problem, format_path

__all__ = ["template_problems"]

#: What each kind of placeholder looks like, and the step that should have replaced it.
_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\$\{[^}]*\}"), "a shell or envsubst variable"),
    (re.compile(r"\{\{.*?\}\}", re.DOTALL), "a Go/Helm template expression"),
    (re.compile(r"<no value>"), "what a Go template writes for a missing value"),
)


def _strings(value: Any, path: list[str | int]) -> Iterator[tuple[list[str | int], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, [*path, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, [*path, index])


def template_problems(document: Any, prefix: str = "") -> list[Problem]:
    """One problem per string value that still holds template syntax, at its path (under `prefix`)."""
    problems: list[Problem] = []
    for path, text in _strings(document, [prefix] if prefix else []):
        for pattern, what in _PLACEHOLDERS:
            found = pattern.search(text)
            if found:
                problems.append(Problem(
                    format_path(path) or "<root>",
                    f"{found.group(0)!r} is {what}, left unrendered; render the file first (helm template, "
                    "envsubst, ...), or write the value itself",
                ))
                break
    return problems
