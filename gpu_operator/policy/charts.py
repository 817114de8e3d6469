"""A Helm chart as the CrossGuard pack sees it: the `Chart` object and every object the chart expands to.

A component installs each chart with Pulumi's `helm.v4.Chart`, which renders the chart (as `helm template`
does, CRDs included) and registers every object it renders as its own resource. So under `pulumi preview
--policy-pack` the policies judge the chart's DaemonSets, Deployments and RBAC too: the DRA driver's privileged
kubelet plugin, the Network Operator's NFD workers. `gpu-operator check` judges the same objects by rendering each
chart with the Helm CLI (`$HELM`, else `helm` on PATH) the way the component installs it (release
`<component>-chart`, the chart's namespace and values, the cluster's Kubernetes version where the config states
it), so what blocks `pulumi up` under the pack fails `check` too.

Where a chart cannot be rendered (no Helm CLI, or a chart repository out of reach) :func:`expand_chart` raises
:class:`ChartExpansionError` naming the chart and the fix; `check` then says which chart's objects went unjudged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from gpu_operator.render.helm_chart import HelmChart

__all__ = ["CLUSTER_SCOPED", "ChartExpansionError", "expand_chart", "find_helm"]

#: Kinds without a namespace; every other object a chart renders lands in the release namespace, as the
#: Kubernetes provider puts a namespaced object that names none there.
CLUSTER_SCOPED = frozenset({
    "APIService", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "DeviceClass",
    "MutatingWebhookConfiguration", "Namespace", "NodeFeatureRule", "PersistentVolume", "PriorityClass",
    "RuntimeClass", "StorageClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "NicClusterPolicy", "ClusterPolicy",
})
#: How long one `helm template` may take (a chart pulled from a registry included).
_TIMEOUT_SECONDS = 120


class ChartExpansionError(RuntimeError):
    """The chart could not be rendered here: the message names the chart, why, and what to do."""


def find_helm() -> str | None:
    """The Helm CLI: `$HELM` when set, else `helm` on PATH; None when there is none."""
    explicit = os.environ.get("HELM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return shutil.which("helm")


def _source_arguments(chart: HelmChart, base: Path) -> list[str]:
    source = chart.source
    if source.kind == "path":
        path = Path(chart.chart)
        return [str(path if path.is_absolute() else base / path)]
    if source.kind == "repository":
        return [chart.chart, "--repo", chart.repository, "--version", chart.version]
    return [chart.chart, "--version", chart.version]


def _documents(text: str, namespace: str) -> list[dict[str, Any]]:
    objects = []
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict) or "kind" not in document:
            continue
        metadata = document.setdefault("metadata", {}) or {}
        document["metadata"] = metadata
        if document["kind"] not in CLUSTER_SCOPED and not metadata.get("namespace"):
            metadata["namespace"] = namespace
        objects.append(document)
    return objects


def expand_chart(chart: HelmChart, release: str, *, kubernetes_version: str | None = None,
                 base: Path | None = None, helm: str | None = None) -> list[dict[str, Any]]:
    """The objects `chart` renders to as release `release` (CRDs included), each in its namespace. A local chart
    path is relative to `base` (the config file's folder). ChartExpansionError when it cannot be rendered."""
    helm = helm or find_helm()
    what = f"Helm chart {chart.name} {chart.version} ({chart.source.origin})"
    if helm is None:
        raise ChartExpansionError(f"{what}: no Helm CLI to render it (set HELM to its path, or put helm on PATH)")
    with tempfile.TemporaryDirectory(prefix="gpu-operator-check-") as folder:
        values = Path(folder) / "values.json"
        values.write_text(json.dumps(_plain(chart.values)))
        argv = [helm, "template", release, *_source_arguments(chart, base or Path.cwd()), "--namespace",
                chart.namespace, "--include-crds", "-f", str(values)]
        if kubernetes_version is not None:
            argv += ["--kube-version", kubernetes_version]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False,
                                  env={**os.environ, "HELM_CACHE_HOME": str(Path(folder) / "cache")})
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ChartExpansionError(f"{what}: helm template did not finish ({error})") from None
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ChartExpansionError(f"{what}: helm template failed ({reason}); a chart out of reach can be given "
                                  "as a local copy (chart: {path: ...})")
    try:
        return _documents(done.stdout, chart.namespace)
    except yaml.YAMLError as error:
        raise ChartExpansionError(f"{what}: helm template printed no YAML ({error})") from None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
