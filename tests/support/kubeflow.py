"""Strict validation of Kubeflow training jobs against the Kubeflow Training SDK's own OpenAPI models.

The training operator's CRDs are not in the shared reference data; its published Python SDK (`kubeflow-training`)
carries the same OpenAPI types, generated from the operator's API. Each object node is walked with its model's
`openapi_types` / `attribute_map`: an unknown key, a wrong scalar type or a missing model is an error. Pod
templates are handed to the strict Kubernetes schema (as a `PodTemplate`), like every other rendered object.
"""

from __future__ import annotations

import re
from typing import Any

from kubeflow.training import models

from tests.support.schemas import KUBERNETES_VERSIONS, builtin_errors

__all__ = ["training_job_errors"]

_SCALARS: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "bool": bool, "float": (int, float),
                                                "object": object, "datetime": str}
_DICT = re.compile(r"dict\(str, (.+)\)")
_LIST = re.compile(r"list\[(.+)\]")


def _check(value: Any, type_name: str, path: str) -> list[str]:
    if (match := _DICT.fullmatch(type_name)) is not None:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping"]
        return [e for key, item in value.items() for e in _check(item, match.group(1), f"{path}.{key}")]
    if (match := _LIST.fullmatch(type_name)) is not None:
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [e for i, item in enumerate(value) for e in _check(item, match.group(1), f"{path}[{i}]")]
    if type_name in _SCALARS:
        wanted = _SCALARS[type_name]
        return [] if isinstance(value, wanted) and not (wanted is int and isinstance(value, bool)) else [
            f"{path}: expected {type_name}, got {type(value).__name__}"]
    if type_name == "V1PodTemplateSpec":
        template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": value}
        return [f"{path}: {e}" for version in KUBERNETES_VERSIONS for e in builtin_errors(template, version)]
    if type_name == "V1ObjectMeta":
        holder = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": value}
        return [f"{path}: {e}" for e in builtin_errors(holder, KUBERNETES_VERSIONS[-1])]
    model = getattr(models, type_name, None)
    if model is None:
        return [f"{path}: no model {type_name} in the Kubeflow Training SDK"]
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({type_name})"]
    by_key = {key: attr for attr, key in model.attribute_map.items()}
    errors = [f"{path}.{key}: not a field of {type_name}" for key in value if key not in by_key]
    for key, item in value.items():
        if key in by_key:
            errors.extend(_check(item, model.openapi_types[by_key[key]], f"{path}.{key}"))
    return errors


def training_job_errors(obj: dict[str, Any]) -> list[str]:
    """Errors of a `kubeflow.org/v1` training job (PyTorchJob, MPIJob, ...); [] when valid."""
    if obj.get("apiVersion") != "kubeflow.org/v1":
        return [f"apiVersion: {obj.get('apiVersion')!r} is not kubeflow.org/v1"]
    return _check(obj, f"KubeflowOrgV1{obj.get('kind')}", obj.get("kind", "?"))
