"""The monitor's copy of its Node: the newest version seen, from the watch or from its own writes.

The monitor reads its Node once when it starts, then watches it (a field selector on its name) and takes the
object every write returns. Whatever comes last is not necessarily newest (a watch event can trail a write's
answer), so a version older than the one held is ignored; resourceVersions are compared as numbers where they
are numbers (etcd's revisions), which they are on every API server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["NodeView"]

Object = dict[str, Any]


def _version(obj: Object) -> int | None:
    text = str((obj.get("metadata") or {}).get("resourceVersion", ""))
    return int(text) if text.isdigit() else None


class NodeView:
    """Holds the newest Node; `on_change(node)` runs after each accepted version (outside the lock)."""

    def __init__(self, on_change: Callable[[Object], None] | None = None) -> None:
        self._node: Object | None = None
        self._lock = threading.Lock()
        self._on_change = on_change

    def offer(self, node: Object) -> bool:
        """Take `node` unless an newer version is held; True when taken."""
        with self._lock:
            held = self._node
            if held is not None:
                old, new = _version(held), _version(node)
                if old is not None and new is not None and new < old:
                    return False
            self._node = node
        if self._on_change is not None:
            self._on_change(node)
        return True

    @property
    def node(self) -> Object | None:
        with self._lock:
            return self._node

    def annotations(self) -> dict[str, str]:
        node = self.node or {}
        return dict((node.get("metadata") or {}).get("annotations") or {})

    def labels(self) -> dict[str, str]:
        node = self.node or {}
        return dict((node.get("metadata") or {}).get("labels") or {})

    def conditions(self) -> list[Object]:
        node = self.node or {}
        return list((node.get("status") or {}).get("conditions") or [])

    def boot_id(self) -> str:
        node = self.node or {}
        return str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")

    def uid(self) -> str | None:
        node = self.node or {}
        return (node.get("metadata") or {}).get("uid")
