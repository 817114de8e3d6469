"""Strict schema validation of rendered objects, without a cluster.

* Built-in kinds: the Kubernetes OpenAPI schemas bundled with `kubernetes-validate`, strict variant
  (`additionalProperties: false`), with validators cached per (version, kind) because loading a schema costs
  milliseconds and a stack has a hundred objects.
* Custom resources: the upstream CRD's `openAPIV3Schema`, converted to JSON Schema (nullable, int-or-string) and
  made strict: every object node that lists `properties` rejects unknown keys unless the CRD preserves them.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from pathlib import Path
from typing import Any
from collections.abc import Iterable

import jsonschema
import pytest
import yaml
from kubernetes_validate import utils as kv
from referencing import Registry, Resource

from tests.support.reference import REFERENCE_DATA

__all__ = ["builtin_errors", "crd_errors", "is_builtin", "validate_objects", "KUBERNETES_VERSIONS", "CRD_FILES"]

#: The oldest and newest Kubernetes minor versions we support.
KUBERNETES_VERSIONS = ("1.30", "1.34")

CRD_FILES = (
    "crds/nvidia.com_clusterpolicies.yaml",
    "crds/nvidia.com_nvidiadrivers.yaml",
    "crds/nfd-api-crds.yaml",
    "crds/mellanox.com_nicclusterpolicies.yaml",
    "crds/mellanox.com_ipoibnetworks.yaml",
    "crds/nv-ipam.nvidia.com_ippools.yaml",
    "crds/monitoring.coreos.com_servicemonitors.yaml",
    "crds/monitoring.coreos.com_podmonitors.yaml",
    "crds/monitoring.coreos.com_prometheusrules.yaml",
    "crds/resource.nvidia.com_computedomains.yaml",
    "crds/resource.nvidia.com_computedomaincliques.yaml",
)


def _schema_version(version: str) -> str:
    return [v for v in kv.all_versions() if kv.major_minor(v) <= version][-1]


@cache
def _builtin_validator(version: str, kind: str, api_version: str) -> jsonschema.Validator | None:
    schema_dir = f"v{_schema_version(version)}-local-strict"
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group}.json", version)
    except FileNotFoundError:
        return None
    definitions = kv.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", version)
    registry = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(definitions) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def is_builtin(obj: dict[str, Any], version: str = KUBERNETES_VERSIONS[-1]) -> bool:
    return _builtin_validator(version, obj["kind"], obj["apiVersion"]) is not None


def builtin_errors(obj: dict[str, Any], version: str) -> list[str]:
    """Strict schema errors of a built-in object for a Kubernetes version ([] when valid)."""
    validator = _builtin_validator(version, obj["kind"], obj["apiVersion"])
    if validator is None:
        raise LookupError(f"no built-in schema for {obj['apiVersion']} {obj['kind']} in Kubernetes {version}")
    return [_describe(e) for e in validator.iter_errors(obj)]


def _to_json_schema(node: Any) -> Any:
    """OpenAPI v3 (Kubernetes flavour) → strict JSON Schema."""
    if isinstance(node, list):
        return [_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    out.pop("nullable", None)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    out.pop("format", None)
    return out


@cache
def _crd_validators(data_dir: Path = REFERENCE_DATA) -> dict[tuple[str, str], jsonschema.Validator]:
    validators: dict[tuple[str, str], jsonschema.Validator] = {}
    for relative in CRD_FILES:
        path = data_dir / relative
        if not path.exists():
            continue
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
                schema.setdefault("properties", {})["metadata"] = {"type": "object"}
                validators[(f"{group}/{version['name']}", kind)] = jsonschema.Draft202012Validator(
                    _to_json_schema(schema)
                )
    return validators


def crd_errors(obj: dict[str, Any]) -> list[str]:
    """Errors of a custom resource against its upstream CRD (strict); LookupError when the CRD is unknown."""
    if not (REFERENCE_DATA / "crds").is_dir():
        pytest.skip(f"upstream CRDs not available in {REFERENCE_DATA}: custom resources cannot be validated")
    validator = _crd_validators().get((obj["apiVersion"], obj["kind"]))
    if validator is None:
        raise LookupError(f"no CRD schema for {obj['apiVersion']} {obj['kind']} in {REFERENCE_DATA}")
    return [_describe(e) for e in validator.iter_errors(obj)]


def _describe(error: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "<root>"
    return f"{path}: {error.message}"


def validate_objects(objects: Iterable[dict[str, Any]], versions: Iterable[str] = KUBERNETES_VERSIONS) -> list[str]:
    """Every schema problem of a rendered stack, each prefixed by the object it belongs to."""
    problems: list[str] = []
    for obj in objects:
        label = f"{obj['kind']}/{obj['metadata'].get('name')}"
        if is_builtin(obj):
            for version in versions:
                problems += [f"{label} (k8s {version}) {e}" for e in builtin_errors(obj, version)]
        else:
            problems += [f"{label} {e}" for e in crd_errors(obj)]
    return problems
