"""The fault book: every finding the monitor holds now, in the order the faults were first seen.

Latched findings (XIDs) stay until :meth:`FaultBook.clear_gpus` (a successful reset of their GPU) or
:meth:`FaultBook.clear` (a new boot). Level findings are replaced as a whole by each health pass
(:meth:`FaultBook.set_levels`); until the first pass that counts, the level findings the Node already shows (from
an earlier run of the monitor in the same boot) are kept as they are, so a restarted monitor neither clears a
fault it has not looked at yet nor writes it again.

An XID already held changes nothing: ten thousand identical XIDs are one finding, one condition write.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from itertools import count
from typing import Any

from gpu_operator.agents.health_monitor.conditions import CONDITION_CLASSES
from gpu_operator.agents.health_monitor.findings import Finding, parse_entries

__all__ = ["FaultBook"]

Key = tuple[str, str, str | None, str | None]


class FaultBook:
    """Thread-safe; `version` grows with every change (the publisher writes when it moved)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latched: dict[Key, Finding] = {}
        self._levels: dict[Key, Finding] = {}
        self._evaluated = False
        self._seen: dict[Key, int] = {}
        self._counter = count()
        self.version = 0

    def _changed(self) -> None:
        self.version += 1

    def _order(self, key: Key) -> int:
        if key not in self._seen:
            self._seen[key] = next(self._counter)
        return self._seen[key]

    def add(self, finding: Finding) -> bool:
        """Hold a latched finding; False when it is held already (nothing changed)."""
        with self._lock:
            if finding.key in self._latched:
                return False
            self._order(finding.key)
            self._latched[finding.key] = finding
            self._changed()
            return True

    def set_levels(self, findings: Iterable[Finding]) -> list[Finding]:
        """Replace the level findings with one pass's; returns those that are new."""
        with self._lock:
            fresh = {f.key: f for f in findings}
            new = [f for key, f in fresh.items() if key not in self._levels]
            gone = [key for key in self._levels if key not in fresh]
            changed = bool(new or gone) or not self._evaluated or any(
                self._levels[key].entry != f.entry for key, f in fresh.items() if key in self._levels)
            for key in gone:
                if key not in self._latched:
                    self._seen.pop(key, None)
            for key in fresh:
                self._order(key)
            self._levels, self._evaluated = fresh, True
            if changed:
                self._changed()
            return new

    def clear_gpus(self, uuids: Iterable[str]) -> list[Finding]:
        """Drop the latched findings of these GPUs (a reset fixed them); returns what was dropped."""
        wanted = set(uuids)
        with self._lock:
            dropped = [f for f in self._latched.values() if f.gpu is not None and f.gpu.uuid in wanted]
            for finding in dropped:
                del self._latched[finding.key]
                if finding.key not in self._levels:
                    self._seen.pop(finding.key, None)
            if dropped:
                self._changed()
            return dropped

    def clear(self) -> None:
        """Forget everything (a new boot): nothing is known until the next pass."""
        with self._lock:
            self._latched.clear()
            self._levels.clear()
            self._seen.clear()
            self._evaluated = True
            self._changed()

    def adopt(self, conditions: Iterable[Mapping[str, Any]]) -> None:
        """Take the findings our True conditions on the Node show (an earlier run's, in this boot)."""
        with self._lock:
            for condition in conditions:
                fault_class = CONDITION_CLASSES.get(condition.get("type", ""))
                if fault_class is None or condition.get("status") != "True":
                    continue
                for entry in parse_entries(str(condition.get("message", ""))):
                    finding = entry.finding(fault_class)
                    self._order(finding.key)
                    (self._latched if finding.latched else self._levels)[finding.key] = finding
            self._evaluated = False
            self._changed()

    def findings(self) -> list[Finding]:
        """Everything held, in first-seen order."""
        with self._lock:
            held = {**self._levels, **self._latched}
            return sorted(held.values(), key=lambda f: self._seen.get(f.key, 0))

    def holds(self, key: Key) -> bool:
        with self._lock:
            return key in self._latched or key in self._levels
