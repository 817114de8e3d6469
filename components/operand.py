"""`GpuOperand`: one operand of the GPU operator (one NVIDIA state) as a Pulumi component.

Its children are the operand's objects in NVIDIA's file order. The DaemonSets depend on everything else in the
operand (ServiceAccount, RBAC, ConfigMaps, Services), so a pod never starts before its permissions and configs
exist; depending on the component waits for all of it.
"""

from __future__ import annotations

from typing import Any, TypedDict
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
from gpu_operator.components.kubernetes_objects import register_object

__all__ = ["GpuOperand", "GpuOperandArgs", "TOKEN"]

TOKEN = "gpu-operator:index:GpuOperand"


class GpuOperandArgs(TypedDict):
    """Inputs of a GpuOperand."""

    state: str
    """NVIDIA's state name, e.g. `state-driver`."""
    objects: Sequence[Mapping[str, Any]]
    """The operand's rendered objects, in apply order."""
    provider: k8s.Provider
    """The Kubernetes provider every object is created with."""


class GpuOperand(pulumi.ComponentResource):
    """The objects of one operand, registered in order under one component."""

    state: str
    resources: list[pulumi.CustomResource]

    def __init__(self, name: str, args: GpuOperandArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TOKEN, name, {"state": args["state"]}, opts)
        self.state = args["state"]
        provider = args["provider"]
        supporting = [obj for obj in args["objects"] if obj["kind"] != "DaemonSet"]
        workloads = [obj for obj in args["objects"] if obj["kind"] == "DaemonSet"]
        self.resources = [self._register(name, obj, provider, []) for obj in supporting]
        self.resources += [self._register(name, obj, provider, list(self.resources)) for obj in workloads]
        self.register_outputs({"state": self.state, "count": len(self.resources)})

    def _register(
        self, prefix: str, obj: Mapping[str, Any], provider: k8s.Provider, depends_on: list[pulumi.Resource]
    ) -> pulumi.CustomResource:
        opts = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=depends_on or None)
        return register_object(prefix, obj, opts)
