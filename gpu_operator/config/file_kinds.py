"""The wrong kind of file, recognised by its keys: one message that says what the file is and what to give instead.

A config document, a GPU Operator values file and a ClusterPolicy manifest are all YAML mappings, and so are the
files people hand over by mistake: a chart's `Chart.yaml` (next to its `values.yaml`), a kubeconfig, another
Kubernetes manifest, the Pulumi project file. Reading one as the other reports every key as unknown, which says
nothing useful; so each command first asks what the file is:

* `render`/`check` (:func:`config_document_problem`) take a config document, and point values files and
  ClusterPolicy manifests to `gpu-operator import-values`, which converts them;
* `import-values` (:func:`import_source_problem`) takes a values file or a manifest, and says so when given a
  Chart.yaml or a config document that needs no import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpu_operator.config.chart_values import DRA_TOP_LEVEL_KEYS
from gpu_operator.config.errors import Problem

__all__ = ["CLUSTER_POLICY_SECTIONS", "config_document_problem", "import_source_problem"]

#: ClusterPolicy sections that NVIDIA's values file has at its top level and our document has under `operator`.
CLUSTER_POLICY_SECTIONS = frozenset({
    "driver", "toolkit", "devicePlugin", "dcgmExporter", "dcgm", "gfd", "mig", "migManager", "validator",
    "nodeStatusExporter", "daemonsets", "psa", "cdi", "sandboxWorkloads", "vfioManager", "vgpuManager",
    "vgpuDeviceManager", "sandboxDevicePlugin", "kataManager", "ccManager", "gds", "gdrcopy", "hostPaths",
})
#: Keys only our config document has at its top level (no chart's values has them).
_DOCUMENT_KEYS = frozenset({"pools", "aks", "cluster", "agents", "configs"})
#: Keys of the DRA driver chart's values that no other file we read has.
_DRA_VALUES_KEYS = frozenset({"kubeletPlugin", "nvidiaDriverRoot", "gpuResourcesEnabledOverride"}) & DRA_TOP_LEVEL_KEYS

_IMPORT_IT = "convert it with `gpu-operator import-values {file}`, then render what that prints"


def _kind(data: Mapping[str, Any]) -> Any:
    return data.get("kind")


def _chart_metadata(data: Mapping[str, Any]) -> str | None:
    if {"apiVersion", "name", "version"} <= set(data) and "kind" not in data and data["apiVersion"] in ("v1", "v2"):
        return (f"is a Helm chart's Chart.yaml (chart {data['name']!r} {data['version']!r}: its name and version), not "
                "{expected}")
    return None


def _kubeconfig(data: Mapping[str, Any]) -> str | None:
    if _kind(data) == "Config" and ("clusters" in data or "contexts" in data):
        return "is a kubeconfig (cluster credentials), not {expected}"
    return None


def _pulumi_project(data: Mapping[str, Any]) -> str | None:
    if {"name", "runtime"} <= set(data) and "config" not in data:
        return "is a Pulumi project file (Pulumi.yaml), not {expected}: give a stack file, Pulumi.<stack>.yaml"
    return None


def _manifest(data: Mapping[str, Any]) -> str | None:
    kind = _kind(data)
    if "apiVersion" in data and isinstance(kind, str):
        return f"is a Kubernetes manifest (kind {kind}), not {{expected}}"
    return None


#: Manifests `import-values` converts into a config document (the GPU Operator's, and the Network Operator's).
_IMPORTED_KINDS = ("ClusterPolicy", "NVIDIADriver", "NicClusterPolicy", "IPoIBNetwork")


def _imported_manifest(data: Mapping[str, Any]) -> str | None:
    kind = _kind(data)
    if kind in _IMPORTED_KINDS:
        return f"is a {kind} manifest, not {{expected}}: " + _IMPORT_IT
    return None


def _gpu_operator_values(data: Mapping[str, Any]) -> str | None:
    sections = sorted(CLUSTER_POLICY_SECTIONS & set(data))
    if len(sections) >= 2 and not _DOCUMENT_KEYS & set(data):
        return (f"looks like the GPU Operator chart's values ({', '.join(sections[:3])} at the top level), not "
                "{expected}: " + _IMPORT_IT + " (or move those sections under operator:)")
    return None


def _network_values(data: Mapping[str, Any]) -> str | None:
    # imported here: the importers package reads config documents with the loader, which imports this module
    from gpu_operator.config.importers.network import is_network_values

    if is_network_values(data) and not _DOCUMENT_KEYS & set(data):
        return ("looks like the Network Operator chart's values, not {expected}: " + _IMPORT_IT +
                " (it becomes the network section)")
    return None


def _dra_values(data: Mapping[str, Any]) -> str | None:
    if _DRA_VALUES_KEYS & set(data) and not _DOCUMENT_KEYS & set(data):
        return ("looks like the DRA driver chart's values, not {expected}: put them under dra.values of a config "
                "document (the stack sets nvidiaDriverRoot, resources and the kubelet plugin's nodeSelector itself)")
    return None


def _config_document(data: Mapping[str, Any]) -> str | None:
    if _DOCUMENT_KEYS & set(data) and not {"apiVersion", "kind"} & set(data):
        return "is already a config document ({keys}), not {expected}: render it with `gpu-operator render -f {file}`"
    return None


Recogniser = Callable[[Mapping[str, Any]], "str | None"]

#: What `render` and `check` recognise, most specific first.
_FOR_RENDER: tuple[Recogniser, ...] = (
    _chart_metadata, _kubeconfig, _imported_manifest, _manifest, _pulumi_project, _gpu_operator_values, _network_values,
    _dra_values,
)
#: What `import-values` recognises (GPU Operator and Network Operator values and manifests are what it takes).
_FOR_IMPORT: tuple[Recogniser, ...] = (_chart_metadata, _kubeconfig, _pulumi_project, _config_document, _dra_values)


def _problem(data: Any, recognisers: tuple[Recogniser, ...], expected: str, file: str) -> Problem | None:
    if not isinstance(data, Mapping) or not all(isinstance(key, str) for key in data):
        return None
    for recognise in recognisers:
        found = recognise(data)
        if found is not None:
            keys = ", ".join(sorted(_DOCUMENT_KEYS & set(data)))
            return Problem("", found.format(expected=expected, file=file, keys=keys))
    return None


def config_document_problem(data: Any, file: str = "FILE") -> Problem | None:
    """What the file is instead of a config document, or None when it may be one."""
    problem = _problem(data, _FOR_RENDER, "a config document (see examples/configs)", file)
    if problem is not None and isinstance(data, Mapping) and _chart_metadata(data) is not None:
        return Problem("", f"{problem.message}: to start from the chart's settings, convert its values.yaml (beside "
                           "it) with `gpu-operator import-values values.yaml`")
    return problem


def import_source_problem(data: Any, file: str = "FILE") -> Problem | None:
    """What the file is instead of GPU Operator Helm values or a ClusterPolicy manifest, or None."""
    expected = "the GPU Operator chart's values or a ClusterPolicy manifest"
    if isinstance(data, Mapping) and _chart_metadata(data) is not None:
        return Problem("", str(_chart_metadata(data)).format(expected=expected) +
                       ": give the chart's values.yaml beside it (`helm show values nvidia/gpu-operator`)")
    return _problem(data, _FOR_IMPORT, expected, file)
