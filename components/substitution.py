"""Putting an image reference the stack builds where the config names the image: one value for another, deep.

With `agents.build`, the agents image's reference (by digest) is known only once the build has pushed it: an
Output. The rendered objects name the configured reference; every string equal to it becomes the Output, in
every container of every operand, without copying what does not change. Pure, and free of the cloud SDKs that
build the image (a stack on a plain cluster never loads them).
"""

from __future__ import annotations

from typing import Any, TypeVar
from collections.abc import Mapping

__all__ = ["substitute"]

T = TypeVar("T")


def substitute(value: T, old: str, new: Any) -> T:
    """`value` with every string equal to `old` replaced by `new` (an Input), in dicts, lists and tuples.

    Pure: `value` is not changed, and containers that hold no `old` come back as they were.
    """
    if isinstance(value, str):
        return new if value == old else value  # type: ignore[return-value]
    if isinstance(value, Mapping):
        items = {key: substitute(item, old, new) for key, item in value.items()}
        changed = any(items[key] is not item for key, item in value.items())
        return items if changed else value  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        items_list = [substitute(item, old, new) for item in value]
        if all(a is b for a, b in zip(items_list, value, strict=True)):
            return value
        return type(value)(items_list)  # type: ignore[return-value]
    return value
