"""Helpers for operand tests: render one operand from a config document and look inside its objects."""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from gpu_operator.config import parse_config
from gpu_operator.render.context import RenderContext
from tests.support.schemas import validate_objects

__all__ = ["render_operand", "find", "pod_of", "container", "init_names", "volume_paths", "mounts", "env_of", "assert_valid"]

Object = dict[str, Any]


def render_operand(render: Callable[[RenderContext], list[Object]], document: dict | None = None) -> list[Object]:
    """Render one operand for a config document (validated like any user config)."""
    return render(RenderContext(parse_config(document or {})))


def find(objects: list[Object], kind: str, name: str | None = None) -> Object:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {[o['metadata']['name'] for o in matches]}"
    return matches[0]


def pod_of(ds: Object) -> Object:
    return ds["spec"]["template"]["spec"]


def container(ds: Object, name: str) -> Object:
    pod = pod_of(ds)
    for item in [*pod.get("initContainers", []), *pod["containers"]]:
        if item["name"] == name:
            return item
    raise AssertionError(f"no container {name} in {ds['metadata']['name']}")


def init_names(ds: Object) -> list[str]:
    return [c["name"] for c in pod_of(ds).get("initContainers", [])]


def volume_paths(ds: Object) -> dict[str, str]:
    """hostPath volumes: name → host path."""
    return {v["name"]: v["hostPath"]["path"] for v in pod_of(ds).get("volumes", []) if "hostPath" in v}


def mounts(item: Object) -> dict[str, str]:
    """Volume mounts of a container: volume name → mount path."""
    return {m["name"]: m["mountPath"] for m in item.get("volumeMounts", [])}


def env_of(item: Object) -> dict[str, Any]:
    """Env of a container: name → value (or the valueFrom mapping)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in item.get("env", [])}


def assert_valid(objects: list[Object]) -> None:
    problems = validate_objects(objects)
    assert not problems, "\n".join(problems)
