"""Watch events: what a `?watch=true` answer streams, one JSON object per line.

Each line is `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}`. An `ERROR` event carries a
`Status` instead of an object - most often 410 Expired, meaning the resource version the watch started from is
too old and the caller must read the current state again; it is raised as the matching API exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents.kube.errors import ApiUnreachable, api_error

__all__ = ["ADDED", "BOOKMARK", "DELETED", "ERROR", "MODIFIED", "WatchEvent", "parse_events"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: its type and the object as it is after the change (before it, for DELETED)."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str | None:
        return self.object.get("metadata", {}).get("resourceVersion")


def parse_events(lines: Iterable[bytes]) -> Iterator[WatchEvent]:
    """Events from the lines of a watch answer; ERROR events raise the API error they carry."""
    for line in lines:
        try:
            document = json.loads(line)
        except ValueError as error:
            raise ApiUnreachable(f"the watch stream sent something that is not JSON: {line[:200]!r}") from error
        kind, body = document.get("type"), document.get("object") or {}
        if kind == ERROR:
            raise api_error(int(body.get("code") or 500), body)
        yield WatchEvent(str(kind), body)
