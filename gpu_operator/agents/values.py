"""Flag and environment values, parsed the way NVIDIA's Go programs parse them.

The agents accept the same environment variables as the programs they replace, so they must accept the same
spellings: booleans as Go's `strconv.ParseBool` reads them (`1`, `t`, `TRUE`, `false`, ...) and durations as
Go's `time.ParseDuration` reads them (`60s`, `1m30s`, `1.5h`, `300ms`, `0`).
"""

from __future__ import annotations

import re

__all__ = ["parse_bool", "parse_duration"]

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

#: Go duration units in seconds.
_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool; raises ValueError for anything else."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"invalid boolean {text!r}")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds; raises ValueError for anything else."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return 0.0
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    total, position = 0.0, 0
    for match in _TERM.finditer(body):
        if match.start() != position:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(body):
        raise ValueError(f"invalid duration {text!r}: missing or unknown unit")
    return sign * total
