"""Small builders for the Kubernetes objects operands are made of; each returns a plain dict.

They keep operand modules declarative: an operand reads like its upstream manifest (names, mounts, env in
order) without repeating the boilerplate of apiVersion/kind/metadata or RBAC plumbing.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable, Mapping

from gpu_operator.render.context import MANAGED_BY, RenderContext

__all__ = [
    "Object",
    "metadata",
    "env",
    "env_field",
    "host_path",
    "config_map_volume",
    "empty_dir",
    "mount",
    "privileged",
    "deploy_selector",
    "rule",
    "service_account",
    "role",
    "role_binding",
    "cluster_role",
    "cluster_role_binding",
    "config_map",
    "service",
    "daemonset",
    "DRIVER_ROOT_CTR",
]

Object = dict[str, Any]

#: Where operands mount the containerized driver's root (`hostPaths.driverInstallDir`).
DRIVER_ROOT_CTR = "/driver-root"


def metadata(
    name: str,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Object:
    meta: Object = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**(labels or {}), **MANAGED_BY}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def env(name: str, value: str | bool | int) -> Object:
    if isinstance(value, bool):
        value = "true" if value else "false"
    return {"name": name, "value": str(value)}


def env_field(name: str, field_path: str) -> Object:
    """An env var from the pod's own fields; `apiVersion: v1` is the server's default, which it stores."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}}


def host_path(name: str, path: str, type_: str | None = None) -> Object:
    source: Object = {"path": path}
    if type_:
        source["type"] = type_
    return {"name": name, "hostPath": source}


def config_map_volume(
    name: str, config_map: str, default_mode: int | None = None, items: Iterable[tuple[str, str]] | None = None
) -> Object:
    source: Object = {"name": config_map}
    if items is not None:
        source["items"] = [{"key": key, "path": path} for key, path in items]
    if default_mode is not None:
        source["defaultMode"] = default_mode
    return {"name": name, "configMap": source}


def empty_dir(name: str) -> Object:
    return {"name": name, "emptyDir": {}}


def mount(
    name: str,
    path: str,
    read_only: bool = False,
    propagation: str | None = None,
    sub_path: str | None = None,
) -> Object:
    out: Object = {"name": name, "mountPath": path}
    if read_only:
        out["readOnly"] = True
    if propagation:
        out["mountPropagation"] = propagation
    if sub_path:
        out["subPath"] = sub_path
    return out


def privileged(**extra: Any) -> Object:
    return {"privileged": True, **extra}


def deploy_selector(operand_label: str) -> dict[str, str]:
    """The node selector NVIDIA uses for an operand: `nvidia.com/gpu.deploy.<operand>=true`."""
    return {f"nvidia.com/gpu.deploy.{operand_label}": "true"}


def rule(api_groups: Iterable[str], resources: Iterable[str], verbs: Iterable[str]) -> Object:
    return {"apiGroups": list(api_groups), "resources": list(resources), "verbs": list(verbs)}


def service_account(ctx: RenderContext, name: str, labels: Mapping[str, str] | None = None) -> Object:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(name, ctx.namespace, labels)}


def role(ctx: RenderContext, name: str, rules: list[Object], labels: Mapping[str, str] | None = None) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(name, ctx.namespace, labels),
        "rules": rules,
    }


def role_binding(
    ctx: RenderContext,
    name: str,
    role_name: str | None = None,
    account: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(name, ctx.namespace, labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name or name},
        "subjects": [{"kind": "ServiceAccount", "name": account or name, "namespace": ctx.namespace}],
    }


def cluster_role(name: str, rules: list[Object], labels: Mapping[str, str] | None = None) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels=labels),
        "rules": rules,
    }


def cluster_role_binding(
    ctx: RenderContext,
    name: str,
    role_name: str | None = None,
    account: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, labels=labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name or name},
        "subjects": [{"kind": "ServiceAccount", "name": account or name, "namespace": ctx.namespace}],
    }


def config_map(
    ctx: RenderContext, name: str, data: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, ctx.namespace, labels),
        "data": dict(data),
    }


def service(
    ctx: RenderContext,
    name: str,
    *,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    ports: list[Object],
    annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, ctx.namespace, labels, annotations),
        "spec": {"selector": dict(selector), "ports": ports, **spec},
    }


def daemonset(
    ctx: RenderContext,
    name: str,
    *,
    labels: Mapping[str, str],
    pod_spec: Object,
    selector: Mapping[str, str] | None = None,
    pod_annotations: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Object:
    """A DaemonSet whose pods carry `labels` and whose selector is `selector` (default: the `app` label)."""
    match = dict(selector) if selector is not None else {"app": labels["app"]}
    template_meta: Object = {"labels": dict(labels)}
    if pod_annotations:
        template_meta["annotations"] = dict(pod_annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(name, ctx.namespace, labels, annotations),
        "spec": {
            "selector": {"matchLabels": match},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }
