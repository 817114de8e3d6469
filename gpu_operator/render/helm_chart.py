"""A Helm chart a component installs beside our objects, and Helm's values merge.

:class:`HelmChart` is what the render decides: where Helm gets the chart (its resolved source, see
:mod:`gpu_operator.config.chart_source`), the version its values are written for, the namespace and the values.
The components hand it to Pulumi's `helm.v4.Chart` (`chart`, `repository`, `pinned_version`), `render -o` writes
its values, and `check` judges it as the policy pack does. A repository or registry is asked for that version; a
local chart is installed as it is (its version was checked when the config was read), so none is pinned.
:func:`merge_values` layers a user's values over ours as `helm install -f` does: mappings merge key by key,
recursively; anything else (lists included) is replaced whole, except the lists named in `union_lists` (the
tolerations the stack writes: every pool taint, the chart's own), to which the user's items are added instead.
Neither input is changed.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from gpu_operator.config.chart_source import ChartLocation

__all__ = ["HelmChart", "merge_values"]


@dataclass(frozen=True)
class HelmChart:
    """The Helm chart to install: where from (`source`), the version its values are for, namespace, values."""

    source: ChartLocation
    version: str
    namespace: str
    values: dict[str, Any]

    @property
    def name(self) -> str:
        """The chart's name (its `Chart.yaml` name), whatever the source."""
        return self.source.name

    @property
    def chart(self) -> str:
        """What Helm's chart argument is: the name (repository), the OCI reference, or the local path."""
        return self.source.reference

    @property
    def repository(self) -> str:
        """The chart repository URL for a repository source; empty otherwise."""
        return self.source.where if self.source.kind == "repository" else ""

    @property
    def pinned_version(self) -> str | None:
        """The version Helm is asked for; None for a local chart, which is installed as it is."""
        return None if self.source.kind == "path" else self.version


def merge_values(
    base: dict[str, Any], overrides: dict[str, Any], union_lists: Collection[tuple[str, ...]] = ()
) -> dict[str, Any]:
    """`overrides` over `base` as Helm layers values files; at each path of `union_lists` where both hold a list,
    the base's items come first and the override's are added after them (none twice)."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        below = [path[1:] for path in union_lists if path[:1] == (key,) and len(path) > 1]
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_values(merged[key], value, below)
        elif (key,) in union_lists and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *(copy.deepcopy(item) for item in value if item not in merged[key])]
        else:
            merged[key] = copy.deepcopy(value)
    return merged
