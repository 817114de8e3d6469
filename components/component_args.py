"""Checking a component's `args` before anything is registered.

Component args are TypedDicts: plain dicts at runtime, so a missing provider would surface as a `KeyError` deep
in the constructor, and a kubeconfig string passed where a provider belongs as an obscure engine error later.
`required` names the component, the argument and what it must be instead.
"""

from __future__ import annotations

from typing import Any, TypeVar
from collections.abc import Mapping

__all__ = ["ComponentArgsError", "required"]

T = TypeVar("T")


class ComponentArgsError(TypeError):
    """A component was given args it cannot use."""


def required(
    args: Mapping[str, Any], key: str, expected: type[T] | tuple[type, ...], component: str, what: str
) -> T:
    """`args[key]`, which must be an instance of `expected` (`what` says what it is, for the message)."""
    if key not in args or args[key] is None:
        raise ComponentArgsError(f"{component}: args[{key!r}] is required: {what}")
    value = args[key]
    if not isinstance(value, expected):
        raise ComponentArgsError(
            f"{component}: args[{key!r}] must be {what}, not {type(value).__name__}"
        )
    return value  # type: ignore[no-any-return]
