"""Registering rendered Kubernetes objects (plain dicts) as pulumi_kubernetes resources.

Each built-in kind maps to its typed resource class, so `pulumi preview` shows a typed diff and policies see the
usual type tokens (`kubernetes:apps/v1:DaemonSet`); custom resources (ServiceMonitor, NodeFeatureRule, ...) go
through `apiextensions.CustomResource`. The object's top-level fields become constructor arguments; nested
values keep the API's camelCase, which the provider accepts as-is.

Every object, and every chart's values, is registered in the form the API server stores
(:func:`~gpu_operator.render.stored.as_stored`), whatever a component did to it after the render: a quantity in
another spelling, or an atomic field without the server's default, would differ from the live object on every
refresh and conflict with Helm's field manager when an install is adopted.
"""

from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable, Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.facts.quantity import QuantityError
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.stored import as_stored

__all__ = ["child_options", "register_chart", "register_object", "resource_class", "logical_name",
           "stored_chart_object"]

ResourceClass = Callable[..., pulumi.CustomResource]

_KINDS: dict[tuple[str, str], ResourceClass] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("node.k8s.io/v1", "RuntimeClass"): k8s.node.v1.RuntimeClass,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
    ("resource.k8s.io/v1", "DeviceClass"): k8s.resource.v1.DeviceClass,
    ("resource.k8s.io/v1", "ResourceClaim"): k8s.resource.v1.ResourceClaim,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): k8s.resource.v1.ResourceClaimTemplate,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource_class(obj: Mapping[str, Any]) -> ResourceClass | None:
    """The typed pulumi_kubernetes class for a built-in object, or None for a custom resource."""
    return _KINDS.get((obj["apiVersion"], obj["kind"]))


def logical_name(prefix: str, obj: Mapping[str, Any]) -> str:
    """A Pulumi name unique within a stack: `<prefix>-<kind>-<name>` (namespaced objects add the namespace).

    The prefix is the owning component's name (`GpuOperator`'s, not an operand's): a URN holds the parents' types
    but not their names, so the name must keep two operators in one stack apart, and, starting with the
    operator's name, it follows a rename of the operator (see `GpuOperator`). Kind and namespace stay: an object
    of another kind or namespace is another Kubernetes object."""
    meta = obj["metadata"]
    namespace = f"{meta['namespace']}-" if "namespace" in meta else ""
    return f"{prefix}-{obj['kind'].lower()}-{namespace}{meta['name']}"


def register_object(prefix: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Create the Pulumi resource for one rendered object, in the form the API server stores."""
    obj = as_stored(obj)
    name = logical_name(prefix, obj)
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    cls = resource_class(obj)
    if cls is None:
        return k8s.apiextensions.CustomResource(
            name, api_version=obj["apiVersion"], kind=obj["kind"], opts=opts, **fields
        )
    return cls(name, opts=opts, **{_snake(k): v for k, v in fields.items()})


def child_options(
    parent: pulumi.Resource, provider: pulumi.ProviderResource, opts: pulumi.ResourceOptions | None
) -> Callable[..., pulumi.ResourceOptions]:
    """Options for a component's children, each created after the resources it is given: parented to the
    component, on its provider, deleted with what the component is deleted with (children do not inherit it)."""
    deleted_with = opts.deleted_with if opts is not None else None

    def options(*after: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(after) or None,
                                      deleted_with=deleted_with)

    return options


def register_chart(prefix: str, spec: HelmChart, opts: pulumi.ResourceOptions) -> k8s.helm.v4.Chart:
    """The rendered chart as a `helm.v4.Chart` (each of its objects its own Pulumi resource), `<prefix>-chart`.

    Helm gets the chart as its source says: a name with `repositoryOpts.repo` for a chart repository, an
    `oci://` reference, or a local path (a directory or `.tgz`, with no version: Helm installs it as it is)."""
    repository = k8s.helm.v4.RepositoryOptsArgs(repo=spec.repository) if spec.repository else None
    return k8s.helm.v4.Chart(
        f"{prefix}-chart",
        chart=spec.chart,
        version=spec.pinned_version,
        namespace=spec.namespace,
        repository_opts=repository,
        values=as_stored(spec.values),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transforms=[stored_chart_object])),
    )


def _whole_numbers(value: Any) -> Any:
    """The engine has one number type: a chart's `cpu: 2` reaches a transform as 2.0, which the API server reads
    as the integer it was."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


def stored_chart_object(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """A chart's objects, as Helm rendered them, in the form the API server stores: a chart's templates write
    `fieldRef: {fieldPath: ...}` without the `apiVersion` the server adds, and the struct is atomic, so adopting a
    `helm install` of the chart conflicted with Helm's field manager on every such env var (NFD's gc, worker and
    master). A value that is no quantity where one belongs is left as the chart wrote it, for the server to judge."""
    if not args.type_.startswith("kubernetes:") or args.type_.startswith("kubernetes:helm.sh/"):
        return None
    try:
        props = as_stored(_whole_numbers(dict(args.props)))
    except (QuantityError, TypeError, ValueError):
        return None
    return pulumi.ResourceTransformResult(props, args.opts)
