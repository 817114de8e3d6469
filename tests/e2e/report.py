"""What the e2e tier reports beside pass and fail: charts left out, unused RBAC grants, timings, update summaries.

Tests add lines with `note(...)`; the tier's conftest prints them all in the terminal summary, so `make e2e`
shows them without `-s`.
"""

from __future__ import annotations

__all__ = ["NOTES", "note"]

NOTES: list[str] = []


def note(text: str) -> None:
    NOTES.append(text.strip("\n"))
