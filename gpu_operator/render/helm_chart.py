"""A Helm chart a component installs beside our objects, and Helm's values merge.

:class:`HelmChart` is what the render decides (chart reference, version, namespace, values, and the repository
when the chart is not an OCI reference); the components hand it to Pulumi's `helm.v4.Chart`, and `render -o`
writes its values. :func:`merge_values` layers a user's values over ours as `helm install -f` does: mappings
merge key by key, recursively; anything else (lists included) is replaced whole. Neither input is changed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

__all__ = ["HelmChart", "merge_values"]


@dataclass(frozen=True)
class HelmChart:
    """The Helm chart to install: chart name (or OCI reference), version, namespace, values, repository."""

    chart: str
    version: str
    namespace: str
    values: dict[str, Any]
    repository: str = ""
    """The chart repository URL; empty for an OCI reference in `chart`."""


def merge_values(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
