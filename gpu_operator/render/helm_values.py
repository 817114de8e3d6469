"""Helm's values merge: a user's values over a chart's (or our) defaults, as `helm install -f` layers them.

Mappings merge key by key, recursively; anything else (lists included) is replaced whole. Neither input is
changed.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["merge_values"]


def merge_values(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
