"""How a check says "not valid (yet)": `ValidationFailed`, with the reason as the message."""

from __future__ import annotations

__all__ = ["ValidationFailed"]


class ValidationFailed(Exception):
    """The component is not (yet) working; the message says what was found instead."""
