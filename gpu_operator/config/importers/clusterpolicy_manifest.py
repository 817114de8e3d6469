"""Import an NVIDIA `ClusterPolicy` manifest (nvidia.com/v1) as our config document.

The manifest's `spec` becomes our `operator` section as it is. What the spec leaves out gets NVIDIA's default for
an absent field where that differs from the chart's (:mod:`.cr_defaults`): a hand-written ClusterPolicy without
`dcgm.enabled` runs the standalone DCGM, one without `driver.upgradePolicy` does not upgrade drivers
automatically, and the sandbox operands stay off. `metadata` and `status` describe one object in one cluster and
are dropped. Problems are reported under the manifest's own keys (`spec.driver.version`).
"""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Mapping

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.importers.cr_defaults import absent_defaults
from gpu_operator.config.importers.paths import rename_problems, set_path
from gpu_operator.config.loader import parse_config

__all__ = ["import_clusterpolicy", "API_VERSION", "KIND", "SOURCE"]

API_VERSION = "nvidia.com/v1"
KIND = "ClusterPolicy"
SOURCE = "ClusterPolicy manifest"
_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")


def _manifest_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    problems = [Problem(key, f"unknown key; a manifest has {', '.join(_TOP_LEVEL)}") for key in manifest
                if key not in _TOP_LEVEL]
    if manifest.get("apiVersion") != API_VERSION:
        problems.append(Problem("apiVersion", f"expected {API_VERSION}, got {manifest.get('apiVersion')!r}"))
    if manifest.get("kind") != KIND:
        problems.append(Problem("kind", f"expected {KIND}, got {manifest.get('kind')!r}"))
    if not isinstance(manifest.get("spec") or {}, Mapping):
        problems.append(Problem("spec", f"must be a mapping, got {type(manifest['spec']).__name__}"))
    return problems


def import_clusterpolicy(manifest: Mapping[str, Any], namespace: str = "gpu-operator") -> dict[str, Any]:
    """Our config document for a ClusterPolicy manifest; ConfigError lists every problem."""
    if not isinstance(manifest, Mapping):
        raise ConfigError([Problem("", f"a manifest must be a mapping, got {type(manifest).__name__}")], SOURCE)
    problems = _manifest_problems(manifest)
    if problems:
        raise ConfigError(problems, SOURCE)
    document: dict[str, Any] = {"namespace": namespace, "operator": copy.deepcopy(dict(manifest.get("spec") or {}))}
    for path, value in list(absent_defaults(document)):
        set_path(document, path, value)
    try:
        parse_config(document, source=SOURCE)
    except ConfigError as error:
        raise ConfigError(rename_problems(error.problems, [("operator", "spec")]), SOURCE) from None
    return document
