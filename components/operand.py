"""`GpuOperand`: one operand of the GPU operator (one NVIDIA state) as a Pulumi component.

Its children are the operand's objects. The DaemonSets depend on what their pods need before they start
(ServiceAccount, RBAC, ConfigMaps, RuntimeClasses, CRDs), so a pod never starts before its permissions and configs
exist; depending on the component waits for all of it.

Objects that describe the pods instead of serving them are not prerequisites (see `COMPANIONS`): a Service, and
the ServiceMonitor that scrapes it. pulumi-kubernetes waits (10 minutes by default) until a Service with a
selector targets a ready pod, and the only pods it can target are the DaemonSet's, which exist only after the
DaemonSet, a driver build later, or never on a pool scaled to zero. A Service before its DaemonSet therefore
deadlocks `pulumi up`; Services are created beside the DaemonSet and annotated `pulumi.com/skipAwait`.

Logical names do not depend on the operand (`<operator>-<kind>-<namespace>-<name>`, see
:func:`~gpu_operator.components.kubernetes_objects.logical_name`), so moving an object to another operand keeps
its URN; `aliases` carries the names earlier releases used, so existing stacks update in place.
"""

from __future__ import annotations

import copy
from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
from gpu_operator.components.component_args import required
from gpu_operator.components.kubernetes_objects import logical_name, register_object
from gpu_operator.components.outage_warning import OutageGuard

__all__ = ["GpuOperand", "GpuOperandArgs", "TOKEN", "COMPANIONS", "NEVER_AWAITED", "SKIP_AWAIT"]

TOKEN = "gpu-operator:index:GpuOperand"
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
#: (apiVersion, kind) of objects that describe the DaemonSet's pods rather than serve them: not prerequisites.
COMPANIONS = frozenset({("v1", "Service"), ("monitoring.coreos.com/v1", "ServiceMonitor")})
#: (apiVersion, kind) that pulumi-kubernetes awaits until the DaemonSet's pods are ready: never awaited.
NEVER_AWAITED = frozenset({("v1", "Service")})


class GpuOperandArgs(TypedDict):
    """Inputs of a GpuOperand."""

    state: str
    """NVIDIA's state name, e.g. `state-driver`."""
    objects: Sequence[Mapping[str, Any]]
    """The operand's rendered objects, in apply order."""
    provider: k8s.Provider
    """The Kubernetes provider every object is created with."""
    name_prefix: NotRequired[str]
    """Prefix of the objects' logical names (default: this component's name); `GpuOperator` passes its own."""
    alias_prefixes: NotRequired[Sequence[str]]
    """Prefixes the objects' logical names had before (each becomes an alias), so renames replace nothing."""
    warn_before_delete: NotRequired[bool]
    """Guard the DaemonSets (the driver's) with the GPU outage warning, default false."""
    namespace: NotRequired[tuple[str, pulumi.Resource]]
    """The operator's namespace and its Namespace resource: objects in that namespace are `deleted_with` it (unless
    the component has a `deleted_with` of its own), so a destroy deletes the namespace and lets the API server's
    namespace controller delete what is in it, instead of one delete after another along the operand chain."""


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return obj["apiVersion"], obj["kind"]


def _daemonset_identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What pulumi-kubernetes replaces a DaemonSet for: its name, namespace and (immutable) selector."""
    return {"namespace": obj["metadata"].get("namespace", ""), "name": obj["metadata"]["name"],
            "selector": obj["spec"]["selector"]}


def _not_awaited(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    if _key(obj) not in NEVER_AWAITED:
        return obj
    obj = copy.deepcopy(dict(obj))
    obj["metadata"].setdefault("annotations", {}).update(SKIP_AWAIT)
    return obj


class GpuOperand(pulumi.ComponentResource):
    """The objects of one operand, registered under one component."""

    state: str
    resources: list[pulumi.CustomResource]
    objects: list[Mapping[str, Any]]
    """The objects registered, in the order of `resources`."""
    outage_guard: OutageGuard | None
    """With `warn_before_delete`: the stash whose updates warn before a DaemonSet is replaced or removed."""

    def __init__(self, name: str, args: GpuOperandArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        provider = required(args, "provider", k8s.Provider, f"GpuOperand({name!r})",
                            "a pulumi_kubernetes.Provider for the target cluster")
        super().__init__(TOKEN, name, {"state": args["state"]}, opts)
        self.state = args["state"]
        # children do not inherit deleted_with in the SDK: hand it to every object
        self._deleted_with = opts.deleted_with if opts is not None else None
        self._namespace = args.get("namespace")
        self._prefix = args.get("name_prefix", name)
        self._alias_prefixes = [p for p in args.get("alias_prefixes", ()) if p != self._prefix]
        objects = [_not_awaited(obj) for obj in args["objects"]]
        prerequisites = [o for o in objects if o["kind"] != "DaemonSet" and _key(o) not in COMPANIONS]
        companions = [o for o in objects if _key(o) in COMPANIONS]
        workloads = [o for o in objects if o["kind"] == "DaemonSet"]
        self.outage_guard = None
        if args.get("warn_before_delete", False) and workloads:
            self.outage_guard = OutageGuard(name, "kubernetes:apps/v1:DaemonSet", {
                logical_name(self._prefix, obj): _daemonset_identity(obj) for obj in workloads
            }, pulumi.ResourceOptions(parent=self, deleted_with=self._deleted_with))
        self.resources = [self._register(obj, provider) for obj in prerequisites]
        needed = list(self.resources)
        if self.outage_guard is not None:
            needed.append(self.outage_guard.stash)
        self.resources += [self._register(obj, provider, depends_on=needed) for obj in workloads]
        self.resources += [self._register(obj, provider) for obj in companions]
        self.objects = [*prerequisites, *workloads, *companions]
        self.register_outputs({"state": self.state, "count": len(self.resources)})

    def _deleted_with_for(self, obj: Mapping[str, Any]) -> pulumi.Resource | None:
        if self._deleted_with is not None or self._namespace is None:
            return self._deleted_with
        name, namespace = self._namespace
        return namespace if obj["metadata"].get("namespace") == name else None

    def _register(
        self,
        obj: Mapping[str, Any],
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource] | None = None,
    ) -> pulumi.CustomResource:
        aliases = [pulumi.Alias(name=logical_name(prefix, obj)) for prefix in self._alias_prefixes]
        opts = pulumi.ResourceOptions(
            parent=self,
            provider=provider,
            depends_on=depends_on or None,
            aliases=aliases or None,
            deleted_with=self._deleted_with_for(obj),
        )
        return register_object(self._prefix, obj, opts)
