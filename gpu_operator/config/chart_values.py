"""The values the stack hands to the charts it installs (`nfd.values`, `network.values`, `dra.values`), typed.

Those sections are free-form chart values, passed to Helm beside the values the stack writes itself. The keys
the stack writes or merges into — tolerations, node selectors, affinities, resources, images and the sections
that hold them (NFD's `worker`, `master`, `gc`, `topologyUpdater`; the Network Operator's `operator`; the DRA
driver's `kubeletPlugin` and `controller`) — are typed here against each chart's own values (NFD's
`values.schema.json`, the network-operator and DRA `values.yaml`), so a map where the chart wants a list of
tolerations, or a taint string where it wants a toleration, is refused with its path and the fix instead of
reaching Helm (or the render). Top-level keys the DRA chart does not have are refused too (the Network
Operator's are checked by :class:`~gpu_operator.config.network.NetworkSpec`). Other keys are the chart's own business: Helm passes them to its templates (and checks NFD's schema at install).

A user's tolerations are added to the ones the stack writes (every pool taint, the chart's own), never put in
their place (:func:`gpu_operator.render.helm_chart.merge_values` with `union_lists`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from gpu_operator.config.errors import Problem, problems_from_validation_error
from gpu_operator.config.kube import ResourceRequirements, Toleration

__all__ = [
    "DRA_TOP_LEVEL_KEYS",
    "DRA_VALUES",
    "NETWORK_VALUES",
    "NFD_VALUES",
    "ChartValues",
    "chart_values_problems",
]

#: (value, path) → the problems of that value; `path` is the dotted key in the config document.
Shape = Callable[[Any, str], list[Problem]]

_TAINT = re.compile(r"^(?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)\Z")
_AFFINITY_KEYS = frozenset({"nodeAffinity", "podAffinity", "podAntiAffinity"})
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return "a value of another kind"


def _expect(what: str, fix: str) -> Shape:
    def check(value: Any, path: str) -> list[Problem]:
        return [Problem(path, f"must be {what}, got {_kind(value)}; {fix}")]
    return check


def _mapping(value: Any, path: str) -> list[Problem]:
    if isinstance(value, Mapping):
        return [Problem(f"{path}.{_described_key(k)}", "the key is not a string; quote it")
                for k in value if not isinstance(k, str)]
    return _expect("a mapping", "write the section's keys under it (or leave it out for the chart's default)")(
        value, path)


def _described_key(key: Any) -> str:
    return "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)


def _mapping_or_null(value: Any, path: str) -> list[Problem]:
    return [] if value is None else _mapping(value, path)


def _string(value: Any, path: str) -> list[Problem]:
    if isinstance(value, str):
        return []
    return _expect("a string", f"quote it ({path.rsplit('.', 1)[-1]}: \"...\")")(value, path)


def _host_path(value: Any, path: str) -> list[Problem]:
    """A path on the node, absolute as `dra.driverRoot` must be (the chart mounts it as a hostPath)."""
    if not isinstance(value, str):
        return _string(value, path)
    if not value.startswith("/"):
        return [Problem(path, f"{value!r} must be an absolute host path such as /run/nvidia/driver or /")]
    return []


def _optional_host_path(value: Any, path: str) -> list[Problem]:
    return [] if value == "" else _host_path(value, path)


def _boolean(value: Any, path: str) -> list[Problem]:
    if isinstance(value, bool):
        return []
    return _expect("a boolean", "write true or false, unquoted")(value, path)


def _string_list(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, (list, tuple)):
        return _expect("a list of strings", "write [a, b]")(value, path)
    return [Problem(f"{path}[{i}]", f"must be a string, got {_kind(item)}; quote it")
            for i, item in enumerate(value) if not isinstance(item, str)]


def _model(model: type[BaseModel], value: Any, path: str) -> list[Problem]:
    try:
        model.model_validate(value)
    except ValidationError as error:
        return problems_from_validation_error(error, prefix=[path], model=model)
    return []


def _toleration_for(taint: str) -> str | None:
    match = _TAINT.match(taint.strip())
    if match is None:
        return None
    key, value, effect = match["key"], match["value"], match["effect"]
    if value is None:
        return f"{{key: {key}, operator: Exists, effect: {effect}}}"
    return f"{{key: {key}, operator: Equal, value: \"{value}\", effect: {effect}}}"


def _tolerations(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, (list, tuple)):
        example = "[{key: sku, operator: Equal, value: gpu, effect: NoSchedule}]"
        return _expect("a list of tolerations", f"write them as a list, e.g. {example}")(value, path)
    problems: list[Problem] = []
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        if isinstance(item, str):
            written = _toleration_for(item)
            fix = f"write {written}" if written else "write {key: ..., operator: Equal|Exists, value: ..., effect: ...}"
            problems.append(Problem(where, f"{item!r} is a string; a toleration is a mapping: {fix}"))
        elif not isinstance(item, Mapping):
            problems.append(Problem(where, f"must be a toleration mapping, got {_kind(item)}; write {{key: ..., "
                                           "operator: Equal|Exists, value: ..., effect: ...}"))
        else:
            problems.extend(_model(Toleration, item, where))
    return problems


def _node_selector(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, Mapping):
        return _expect("a mapping of label keys to values", "write {label: \"value\"}")(value, path)
    return [Problem(f"{path}.{_described_key(key)}", f"must be a string, got {_kind(item)}; quote it "
                                                     f"('{_described_key(item)}')")
            for key, item in value.items() if not isinstance(key, str) or not isinstance(item, str)]


def _affinity(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, Mapping):
        return _expect("an affinity mapping", "write {nodeAffinity: {...}} as in a pod spec")(value, path)
    problems = [Problem(f"{path}.{_described_key(key)}", "is not a field of a pod's affinity (it has "
                                                         f"{', '.join(sorted(_AFFINITY_KEYS))})")
                for key in value if key not in _AFFINITY_KEYS]
    problems += [Problem(f"{path}.{key}", f"must be a mapping, got {_kind(item)}; write it as in a pod spec")
                 for key, item in value.items() if key in _AFFINITY_KEYS and not isinstance(item, Mapping)]
    return problems


def _resources(value: Any, path: str) -> list[Problem]:
    if not isinstance(value, Mapping):
        return _expect("a resources mapping", "write {requests: {cpu: 100m}, limits: {memory: 1Gi}}")(value, path)
    return _model(ResourceRequirements, value, path)


def _image(value: Any, path: str) -> list[Problem]:
    """The NFD and DRA charts' `image`: repository, tag and pullPolicy."""
    if not isinstance(value, Mapping):
        return _expect("a mapping", "write {repository: ..., tag: ..., pullPolicy: IfNotPresent}")(value, path)
    problems: list[Problem] = []
    for key, item in value.items():
        where = f"{path}.{_described_key(key)}"
        if key not in ("repository", "tag", "pullPolicy"):
            problems.append(Problem(where, "is not a key of the chart's image (repository, tag, pullPolicy)"))
        elif not isinstance(item, str):
            problems.append(Problem(where, f"must be a string, got {_kind(item)}; quote it"))
        elif key == "pullPolicy" and item not in _PULL_POLICIES:
            problems.append(Problem(where, f"{item!r} is not a pull policy ({', '.join(_PULL_POLICIES)})"))
    return problems


def _pod_section(section: tuple[str, ...]) -> dict[tuple[str, ...], Shape]:
    """A chart section that runs pods: the section itself and the scheduling and resource keys in it."""
    return {
        section: _mapping,
        (*section, "tolerations"): _tolerations,
        (*section, "nodeSelector"): _node_selector,
        (*section, "affinity"): _affinity,
        (*section, "resources"): _resources,
    }


def _nfd_shapes(prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Shape]:
    shapes: dict[tuple[str, ...], Shape] = {(*prefix, "image"): _image, (*prefix, "priorityClassName"): _string}
    for section in ("worker", "master", "gc", "topologyUpdater"):
        shapes.update(_pod_section((*prefix, section)))
        shapes[(*prefix, section, "serviceAccount")] = _mapping
        shapes[(*prefix, section, "enable")] = _boolean
    for section in ("worker", "master", "topologyUpdater"):
        shapes[(*prefix, section, "config")] = _mapping_or_null
    shapes[(*prefix, "master", "extraLabelNs")] = _string_list
    return shapes


@dataclass(frozen=True)
class ChartValues:
    """How one config section's chart values are checked: its path, chart, top-level keys and typed keys."""

    section: str
    chart: str
    keys: frozenset[str] | None
    shapes: Mapping[tuple[str, ...], Shape] = field(default_factory=dict)


#: Top-level keys of the dra-driver-nvidia-gpu 0.4.1 chart's values.yaml.
DRA_TOP_LEVEL_KEYS = frozenset({
    "allowDefaultNamespace", "altProcDevices", "controller", "featureGates", "fullnameOverride",
    "gpuResourcesEnabledOverride", "image", "imagePullSecrets", "kubeletPlugin", "logVerbosity", "nameOverride",
    "namespaceOverride", "nvidiaCDIHookPath", "nvidiaDriverRoot", "resourceApiVersion", "resources",
    "selectorLabelsOverride", "serviceAccount", "webhook",
})

#: NFD's top-level keys are not checked: its schema allows others, and older GPU Operator charts' subchart values
#: carry keys of older NFD releases (`enableNodeFeatureApi`), which Helm passes on and the 0.19 chart ignores.
NFD_VALUES = ChartValues("nfd.values", "node-feature-discovery", None, _nfd_shapes())

NETWORK_VALUES = ChartValues(
    "network.values", "network-operator", None,  # its top-level keys: NetworkSpec's own check (CHART_VALUE_KEYS)
    {
        ("nfd",): _mapping,
        ("nfd", "enabled"): _boolean,
        ("nfd", "deployNodeFeatureRules"): _boolean,
        ("node-feature-discovery",): _mapping,
        **_nfd_shapes(("node-feature-discovery",)),
        **_pod_section(("operator",)),
        ("operator", "repository"): _string,
        ("operator", "image"): _string,
    },
)

DRA_VALUES = ChartValues(
    "dra.values", "dra-driver-nvidia-gpu", DRA_TOP_LEVEL_KEYS,
    {
        ("image",): _image,
        ("nvidiaDriverRoot",): _host_path,
        ("nvidiaCDIHookPath",): _optional_host_path,
        ("resourceApiVersion",): _string,
        ("gpuResourcesEnabledOverride",): _boolean,
        ("resources",): _mapping,  # the chart's GPU / ComputeDomain switches, not a container's resources
        ("resources", "gpus"): _mapping,
        ("resources", "gpus", "enabled"): _boolean,
        ("resources", "computeDomains"): _mapping,
        ("resources", "computeDomains", "enabled"): _boolean,
        **_pod_section(("kubeletPlugin",)),
        ("kubeletPlugin", "kubeletRegistrarDirectoryPath"): _string,
        ("kubeletPlugin", "kubeletPluginsDirectoryPath"): _string,
        **_pod_section(("controller",)),
    },
)


def _at(values: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of `path`; not found when a parent is missing or is not a mapping (reported on its own)."""
    node: Any = values
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _problems(values: Any, chart: ChartValues) -> Iterator[Problem]:
    if not isinstance(values, Mapping):
        yield Problem(chart.section, f"must be a mapping of {chart.chart} chart values, got {_kind(values)}")
        return
    if chart.keys is not None:
        for key in values:
            if key not in chart.keys:
                yield Problem(f"{chart.section}.{_described_key(key)}",
                              f"not a value of the {chart.chart} chart (it has {', '.join(sorted(chart.keys))}); "
                              "check the spelling")
    for path, shape in chart.shapes.items():
        found, value = _at(values, path)
        if found:
            yield from shape(value, ".".join((chart.section, *path)))


def chart_values_problems(values: Any, chart: ChartValues) -> list[Problem]:
    """Every problem of a chart-values section: unknown top-level keys, and keys of the wrong shape."""
    return list(_problems(values, chart))
