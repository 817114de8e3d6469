"""What an update should change, from the render alone, and what the engine planned, in the same terms.

A stack's Kubernetes objects are exactly :func:`gpu_operator.render.stack.stack_objects` of its config (the
components add annotations and image references deterministically); the Helm charts' objects are Helm's. So
between two configs, the objects the engine creates, updates (or replaces) and deletes must be the objects that
appear, change and disappear between the two renders. :func:`render_diff` computes that from the configs;
:func:`planned_diff` reads it from an engine operation's steps, leaving out what the charts hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.stack import stack_objects
from tests.e2e.engine import Step

__all__ = ["ObjectKey", "RenderDiff", "object_key", "planned_diff", "render_diff"]

#: (apiVersion, kind, namespace, name)
ObjectKey = tuple[str, str, str, str]
_CREATE = frozenset({"create"})
_UPDATE = frozenset({"update", "replace", "create-replacement"})
_DELETE = frozenset({"delete"})


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"]


@dataclass
class RenderDiff:
    created: set[ObjectKey] = field(default_factory=set)
    updated: set[ObjectKey] = field(default_factory=set)
    deleted: set[ObjectKey] = field(default_factory=set)

    def counts(self) -> tuple[int, int, int]:
        return len(self.created), len(self.updated), len(self.deleted)

    def describe(self, other: RenderDiff) -> str:
        """What differs from `other`, for an assertion message."""
        lines = []
        for what in ("created", "updated", "deleted"):
            mine, theirs = getattr(self, what), getattr(other, what)
            lines += [f"  {what} here only: {key}" for key in sorted(mine - theirs)]
            lines += [f"  {what} there only: {key}" for key in sorted(theirs - mine)]
        return "\n".join(lines)


def _by_key(config: GpuStackConfig | None) -> dict[ObjectKey, Mapping[str, Any]]:
    return {object_key(obj): obj for obj in stack_objects(config)} if config is not None else {}


def render_diff(old: GpuStackConfig | None, new: GpuStackConfig | None) -> RenderDiff:
    """The objects that appear, change and disappear between the renders of two configs."""
    before, after = _by_key(old), _by_key(new)
    return RenderDiff(
        created=set(after) - set(before),
        updated={key for key in set(after) & set(before) if after[key] != before[key]},
        deleted=set(before) - set(after),
    )


def _from_a_chart(step: Step) -> bool:
    return "kubernetes:helm.sh/" in step.parent


def planned_diff(steps: Iterable[Step]) -> RenderDiff:
    """The Kubernetes objects an operation creates, updates or replaces, and deletes (chart objects left out)."""
    diff = RenderDiff()
    for step in steps:
        key = step.object_key
        if key is None or _from_a_chart(step):
            continue
        if step.op in _CREATE:
            diff.created.add(key)
        elif step.op in _UPDATE:
            diff.updated.add(key)
        elif step.op in _DELETE:
            diff.deleted.add(key)
    return diff
