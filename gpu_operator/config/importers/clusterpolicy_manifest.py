"""Import an NVIDIA `ClusterPolicy` manifest (nvidia.com/v1) as our config document.

The manifest's `spec` becomes our `operator` section as it is. What the spec leaves out gets NVIDIA's default for
an absent field where that differs from the chart's (:mod:`.cr_defaults`): a hand-written ClusterPolicy without
`dcgm.enabled` runs the standalone DCGM, one without `driver.upgradePolicy` does not upgrade drivers
automatically, and the sandbox operands stay off. `metadata` and `status` describe one object in one cluster and
are dropped. Problems are reported under the manifest's own keys (`spec.driver.version`).

As the API server stores it: a `null` field is the same as an absent one (the ClusterPolicy schema declares no
nullable field, so Kubernetes drops them), so `validator.plugin: null` takes the default. A string that still
holds template syntax is refused. `operator.defaultRuntime: crio` (or `containerd`) also becomes
`cluster.containerRuntime`, the runtime the operands are rendered for. Fields older CRDs had and today's API server
drops (`driver.rollingUpdate`, v22.9.0) are dropped too, and reported (:mod:`.clusterpolicy_notes`). `docker`, the Helm chart's default up to
v24.9, says nothing about the nodes and is dropped (see :mod:`.helm_handlers`). `dcgmExporter.serviceMonitor.enabled:
true` asks for a ServiceMonitor where its CRD exists, which is our unset switch (`cluster.prometheusOperator`).
"""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Mapping

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.importers.cr_defaults import absent_defaults
from gpu_operator.config.importers.helm_handlers import NODE_RUNTIMES
from gpu_operator.config.importers.paths import described, rename_problems, set_path
from gpu_operator.config.importers.template_syntax import template_problems
from gpu_operator.config.loader import parse_config

__all__ = ["import_clusterpolicy", "without_nulls", "API_VERSION", "KIND", "SOURCE", "REMOVED_FIELDS"]

API_VERSION = "nvidia.com/v1"
KIND = "ClusterPolicy"
SOURCE = "ClusterPolicy manifest"
_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
#: spec fields of older ClusterPolicy CRDs that today's CRD no longer has (the API server prunes them)
REMOVED_FIELDS = (("driver", "rollingUpdate"),)


def _manifest_problems(manifest: Mapping[str, Any]) -> list[Problem]:
    problems = [Problem(key, f"unknown key; a manifest has {', '.join(_TOP_LEVEL)}") for key in manifest
                if key not in _TOP_LEVEL]
    if manifest.get("apiVersion") != API_VERSION:
        problems.append(Problem("apiVersion", f"expected {API_VERSION}, got {manifest.get('apiVersion')!r}"))
    if manifest.get("kind") != KIND:
        problems.append(Problem("kind", f"expected {KIND}, got {manifest.get('kind')!r}"))
    if not isinstance(manifest.get("spec") or {}, Mapping):
        problems.append(Problem("spec", f"must be a mapping, got {described(manifest['spec'])}"))
    return problems


def without_nulls(value: Any) -> Any:
    """A manifest as the API server stores it: mapping entries whose value is null are dropped."""
    if isinstance(value, Mapping):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _runtime(spec: dict[str, Any]) -> dict[str, Any]:
    """The `cluster` section that `operator.defaultRuntime` implies (and the spec without a docker default)."""
    operator = spec.get("operator")
    runtime = operator.get("defaultRuntime") if isinstance(operator, Mapping) else None
    if runtime in NODE_RUNTIMES:
        return {"containerRuntime": runtime}
    if runtime == "docker":
        del operator["defaultRuntime"]
    return {}


def _service_monitor(spec: dict[str, Any]) -> None:
    """`serviceMonitor.enabled: true` means "where the CRD exists" to NVIDIA: our unset, decided by the cluster."""
    exporter = spec.get("dcgmExporter")
    monitor = exporter.get("serviceMonitor") if isinstance(exporter, Mapping) else None
    if isinstance(monitor, dict) and monitor.get("enabled") is True:
        del monitor["enabled"]


def import_clusterpolicy(manifest: Mapping[str, Any], namespace: str = "gpu-operator") -> dict[str, Any]:
    """Our config document for a ClusterPolicy manifest; ConfigError lists every problem."""
    if not isinstance(manifest, Mapping):
        raise ConfigError([Problem("", f"a manifest must be a mapping, got {described(manifest)}")], SOURCE)
    problems = _manifest_problems(manifest) or template_problems(manifest.get("spec"), "spec")
    if problems:
        raise ConfigError(problems, SOURCE)
    spec = without_nulls(copy.deepcopy(dict(manifest.get("spec") or {})))
    document: dict[str, Any] = {"namespace": namespace, "operator": spec}
    for section, field in REMOVED_FIELDS:
        if isinstance(spec.get(section), dict):
            spec[section].pop(field, None)
    cluster = _runtime(spec)
    if cluster:
        document["cluster"] = cluster
    for path, value in list(absent_defaults(document)):
        set_path(document, path, value)
    _service_monitor(spec)
    try:
        parse_config(document, source=SOURCE)
    except ConfigError as error:
        raise ConfigError(rename_problems(error.problems, [("operator", "spec")]), SOURCE) from None
    return document
