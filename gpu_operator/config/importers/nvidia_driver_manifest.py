"""Import NVIDIA `NVIDIADriver` manifests (nvidia.com/v1alpha1) as drivers of their own.

A cluster whose ClusterPolicy sets `driver.useNvidiaDriverCRD` runs one driver per NVIDIADriver. Each becomes an
entry of the document's `drivers` section under its name, with its `nodeSelector`, `default` and `uid` (NVIDIA
names the driver DaemonSets after a hash of the uid, so the rendered DaemonSets keep their names), and
`operator.driver.useNvidiaDriverCRD` is set.

A spec written under `drivers` says what differs from the cluster's driver (:mod:`gpu_operator.config.nvidia_driver`),
while an NVIDIADriver stands alone: what it leaves out is the CRD's default or the controller's
(`nvidiadriver_types.go`: image `nvcr.io/nvidia/driver`, kernel module type `auto`, the upgrade policy of
`getDefaultUpgradePolicySpec`, NLS licensing on; `internal/state/driver.go` `getDefaultStartupProbe`: 5 s initial
delay when precompiled, 60 s otherwise; priority class `system-node-critical`). So each entry is the NVIDIADriver as
NVIDIA's controller reads it, less what equals the cluster driver's: rendering the entry gives what NVIDIA rendered.
A non-default NVIDIADriver without a `nodeSelector` selects every GPU node (`GetNodeSelector`:
`nvidia.com/gpu.present=true`), and is imported with that selector. `metadata` other than `name` and `uid`, and
`status`, are dropped; `null` fields are absent, as the API server stores them.
"""

from __future__ import annotations

import copy
from typing import Any
from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from gpu_operator.config.document import GpuStackConfig
from gpu_operator.config.driver_group_checks import DRIVER_CONFLICT_CHECKS
from gpu_operator.config.driver_groups import default_startup_probe
from gpu_operator.config.errors import ConfigError, Problem, problems_from_validation_error
from gpu_operator.config.importers.clusterpolicy_manifest import without_nulls
from gpu_operator.config.importers.paths import described
from gpu_operator.config.importers.template_syntax import template_problems
from gpu_operator.config.node_metadata import GPU_PRESENT_LABEL
from gpu_operator.config.nvidia_driver import NvidiaDriverSpec, cluster_driver_document, full_document

__all__ = ["API_VERSION", "KIND", "SOURCE", "import_nvidia_drivers", "is_nvidia_driver", "rendered_spec"]

API_VERSION = "nvidia.com/v1alpha1"
KIND = "NVIDIADriver"
SOURCE = "NVIDIADriver manifests"
_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
_PRIORITY_CLASS = "system-node-critical"


def is_nvidia_driver(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("kind") == KIND


def _name(manifest: Mapping[str, Any]) -> Any:
    metadata = manifest.get("metadata")
    return metadata.get("name") if isinstance(metadata, Mapping) else None


def _manifest_problems(manifest: Any, where: str) -> list[Problem]:
    if not isinstance(manifest, Mapping):
        return [Problem(where, f"a manifest must be a mapping, got {described(manifest)}")]
    problems = [Problem(f"{where}.{key}", f"unknown key; a manifest has {', '.join(_TOP_LEVEL)}")
                for key in manifest if key not in _TOP_LEVEL]
    if manifest.get("apiVersion") != API_VERSION:
        problems.append(Problem(f"{where}.apiVersion", f"expected {API_VERSION}, got {manifest.get('apiVersion')!r}"))
    if not isinstance(_name(manifest), str) or not _name(manifest):
        problems.append(Problem(f"{where}.metadata.name", "an NVIDIADriver needs its name: it names its drivers entry"))
    if not isinstance(manifest.get("spec") or {}, Mapping):
        problems.append(Problem(f"{where}.spec", f"must be a mapping, got {described(manifest['spec'])}"))
    return problems or template_problems(manifest.get("spec"), f"{where}.spec")


def rendered_spec(spec: Mapping[str, Any]) -> NvidiaDriverSpec:
    """An NVIDIADriver's spec as NVIDIA's controller reads it: the CRD's and the controller's defaults filled in.
    ValidationError when it is no NVIDIADriver spec."""
    model = NvidiaDriverSpec.model_validate(dict(spec))
    updates: dict[str, Any] = {}
    if model.startup_probe is None:
        updates["startup_probe"] = default_startup_probe(model.use_precompiled)
    if not model.priority_class_name:
        updates["priority_class_name"] = _PRIORITY_CLASS
    if not model.default and not model.node_selector:
        updates["node_selector"] = {GPU_PRESENT_LABEL: "true"}
    return model.model_copy(update=updates)


def _entry(manifest: Mapping[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    spec = without_nulls(copy.deepcopy(dict(manifest.get("spec") or {})))
    full = full_document(rendered_spec(spec))
    entry = {key: value for key, value in full.items() if key not in ("uid", "default") and base.get(key) != value}
    if full["default"]:
        entry = {"default": True, **entry}
    uid = manifest["metadata"].get("uid")
    if isinstance(uid, str) and uid:
        entry["uid"] = uid
    return entry


def import_nvidia_drivers(document: dict[str, Any], manifests: Sequence[Any]) -> dict[str, Any]:
    """`document` (our config document, from the ClusterPolicy or values imported beside them) with the
    NVIDIADrivers as `drivers` entries and `useNvidiaDriverCRD` on; ConfigError lists every problem."""
    problems: list[Problem] = []
    for index, manifest in enumerate(manifests):
        problems += _manifest_problems(manifest, f"[{index}]")
    names = [_name(manifest) for manifest in manifests if isinstance(manifest, Mapping)]
    problems += [Problem(f"{name}.metadata.name", "two NVIDIADrivers have this name") for name in
                 sorted({n for n in names if isinstance(n, str) and names.count(n) > 1})]
    if problems:
        raise ConfigError(problems, SOURCE)
    result = copy.deepcopy(document)
    base = cluster_driver_document(GpuStackConfig.model_validate(result).operator)
    drivers: dict[str, Any] = {}
    for manifest in manifests:
        try:
            drivers[manifest["metadata"]["name"]] = _entry(manifest, base)
        except ValidationError as error:
            problems += problems_from_validation_error(error, prefix=(manifest["metadata"]["name"], "spec"),
                                                       model=NvidiaDriverSpec)
    if problems:
        raise ConfigError(problems, SOURCE)
    operator = result.setdefault("operator", {})
    operator.setdefault("driver", {})["useNvidiaDriverCRD"] = True
    result["drivers"] = drivers
    conflicts = _conflicts(GpuStackConfig.model_validate(result))
    if conflicts:
        raise ConfigError(conflicts, SOURCE)
    return result


def _conflicts(doc: GpuStackConfig) -> list[Problem]:
    """What NVIDIA's operator refuses among the NVIDIADrivers themselves: a second default, two selectors of one
    node. (What the document needs besides, such as the controller that labels the nodes, is the render's to say.)"""
    return [Problem(problem.path.removeprefix("drivers."), problem.message)
            for check in DRIVER_CONFLICT_CHECKS for problem in check(doc)]
