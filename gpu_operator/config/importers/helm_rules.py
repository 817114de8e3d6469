"""The kinds of rule a Helm values key can have, and the translation state the rules write into.

Every key of the GPU Operator chart's `values.yaml` has exactly one rule (see :mod:`.helm_keys`):

* :class:`Copy` — the chart's `templates/clusterpolicy.yaml` copies the value into the ClusterPolicy spec; we
  copy it to the same field of our `operator` section (or to `nfd`), with the template's `if`, `default` and
  `quote` behaviour;
* :class:`Handle` — the chart does more than copy (creates a ConfigMap from `config.data`, checks a combination,
  a value whose meaning changed between chart versions); a function translates the whole value;
* :class:`Reject` — a value this package cannot honour (OpenShift, the DRA stack, extra manifests): an error that
  says what to do instead;
* :class:`Ignore` — a key that only shapes what Helm itself deploys (the operator Deployment, the NFD subchart,
  CRD hooks); accepted, with the reason it has no effect here.

A key with no rule is an error: a typo in a values file must not be dropped silently.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal
from collections.abc import Callable, Mapping

from gpu_operator.config.errors import Problem
from gpu_operator.config.importers.paths import MISSING, get_path, set_path

__all__ = ["Copy", "Ignore", "Reject", "Handle", "Rule", "Translation"]


@dataclass(frozen=True)
class Copy:
    """The template copies the value to `target`, a dotted path of our document.

    `when="set"` is the template's `{{- if .Values.x }}`: an empty value leaves the field out of the ClusterPolicy,
    so NVIDIA's default for an absent field applies. `when="always"` writes the value whatever it is.
    `default` is the template's `| default`, `quote` its `| quote` (numbers become strings).
    """

    target: str
    when: Literal["always", "set"] = "set"
    default: Any = MISSING
    quote: bool = False


@dataclass(frozen=True)
class Ignore:
    """Accepted and not mapped, for the stated reason."""

    reason: str


@dataclass(frozen=True)
class Reject:
    """A key whose value must pass `accepts`; otherwise `message` (what to do instead) is reported."""

    accepts: Callable[[Any], bool]
    message: str


@dataclass(frozen=True)
class Handle:
    """A value the chart does more with than copy; `targets` pairs each document path it writes with its key.

    `note`, when given, tells the user why a value it returns a reason for is accepted and has no effect here.
    """

    translate: Callable[[Translation, str, Any], None]
    targets: tuple[tuple[str, str], ...]
    note: Callable[[Any], str | None] | None = None


Rule = Copy | Ignore | Reject | Handle


@dataclass
class Translation:
    """The document being built from one values file, and the problems found on the way."""

    values: Mapping[str, Any]
    defaults: Mapping[str, Any]
    document: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def write(self, target: str, value: Any) -> None:
        """Set a document key to a copy of the value (the document never shares objects with the values)."""
        set_path(self.document, target, copy.deepcopy(value))

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def value(self, path: str, default_target: str) -> Any:
        """A values key as the chart sees it: the user's value, else the chart default (our default at the target)."""
        given = get_path(self.values, path)
        return get_path(self.defaults, default_target) if given is MISSING or given is None else given
