"""Fields of a ClusterPolicy manifest that are accepted and have no effect here, each with the reason.

The manifest's `spec` is kept verbatim, so a field that NVIDIA's operator itself no longer reads (deprecated in
the CRD), or that only drives a part of NVIDIA's operator this package does not run, is in the document and
changes nothing. The user is told, as for Helm values (:func:`.ignored_helm_values`), rather than left to find out.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Mapping

from gpu_operator.config.importers.helm_keys import HELM_RULES
from gpu_operator.config.importers.helm_rules import Handle, Ignore
from gpu_operator.config.importers.paths import MISSING, get_path, is_empty

__all__ = ["ignored_clusterpolicy_values"]


def _helm_reason(key: str) -> str:
    rule = HELM_RULES[key]
    assert isinstance(rule, Ignore), key
    return rule.reason


def _runtime_note(value: Any) -> str | None:
    rule = HELM_RULES["operator.defaultRuntime"]
    assert isinstance(rule, Handle) and rule.note is not None
    return rule.note(value)


#: spec path → the reason, for a value that is set (not empty); or a function of the value giving one (or None).
_INERT: dict[str, str | Callable[[Any], str | None]] = {
    "operator.defaultRuntime": _runtime_note,
    "operator.initContainer": _helm_reason("operator.initContainer"),
    "operator.metrics": _helm_reason("operator.metrics"),
    "cdi.default": _helm_reason("cdi.default"),
    "dcgm.hostPort": "NVIDIA's operator has not used it since v24.9: the exporter reaches the standalone DCGM through "
                     "the node-local Service nvidia-dcgm:5555, and no host port is opened",
    "driver.rollingUpdate": _helm_reason("driver.rollingUpdate"),
    "driver.useOpenKernelModules": _helm_reason("driver.useOpenKernelModules"),
    "toolkit.args": _helm_reason("toolkit.args"),
    "toolkit.hostNetwork": _helm_reason("toolkit.hostNetwork"),
    "gds.args": _helm_reason("gds.args"),
    "gdrcopy.args": _helm_reason("gdrcopy.args"),
    "kataManager": _helm_reason("kataManager"),
    "psp.enabled": _helm_reason("psp"),
}


def ignored_clusterpolicy_values(manifest: Mapping[str, Any]) -> dict[str, str]:
    """`spec.<path>` → why that field of the manifest has no effect here (for notes to the user)."""
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    found: dict[str, str] = {}
    for path, reason in _INERT.items():
        value = get_path(spec, path)
        if value is MISSING or is_empty(value) or (path == "kataManager" and not _kata_set(value)):
            continue
        text = reason(value) if callable(reason) else reason
        if text is not None:
            found[f"spec.{path}"] = text
    return found


def _kata_set(section: Any) -> bool:
    # `enabled: true` is refused by the config checks; anything else in the section is what has no effect
    return isinstance(section, Mapping) and any(not is_empty(v) for k, v in section.items() if k != "enabled")
