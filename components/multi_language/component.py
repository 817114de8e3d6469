"""The multi-language `GpuOperator`: the operator's operands for programs written in any Pulumi language.

Pulumi's component-provider analyzer builds the package schema from type annotations, and it can describe neither
a `pulumi_kubernetes.Provider` argument nor a config that is "a pydantic model or a mapping" (a union). This entry
component takes what every language can pass instead:

* `kubeconfig`: the target cluster's kubeconfig, an input (another resource's output works), kept secret;
* `config`: the config document, camelCase as in a stack file. It is a plain value: the operands are rendered from
  it while the component is constructed, so it must be known then (a literal document or plain stack config, not
  a secret or another resource's output);
* `waitForDaemonsets`: wait for DaemonSet rollouts during `pulumi up` (default false).

It builds a Kubernetes provider from the kubeconfig and the Python :class:`~gpu_operator.components.GpuOperator`
as its child, under the same name, so every object has the logical name a Python program would give it, and hands
on that component's outputs. It holds no Kubernetes knowledge of its own.

This module must not use `from __future__ import annotations`: the analyzer reads the annotations at run time and
needs them as types, not strings.
"""

import math
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.kubernetes_provider import kubernetes_provider
from gpu_operator.components.component_args import required
from gpu_operator.components.operator import TOKEN
from gpu_operator.components.operator import GpuOperator as OperatorComponent

from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config

__all__ = ["CONFIG_SOURCE", "GpuOperator", "GpuOperatorInputs", "known_document"]

#: How config problems name the document: the input property holding it.
CONFIG_SOURCE = "config"
_NOT_KNOWN = ("must be known when the component is constructed (the operands are rendered from it): pass a literal "
              "document or plain stack config, not a secret or another resource's output")


class GpuOperatorInputs(TypedDict):
    """Inputs of the multi-language GpuOperator."""

    kubeconfig: pulumi.Input[str]
    """The target cluster's kubeconfig (kept secret): every object uses a provider built from it."""
    config: NotRequired[dict[str, Any]]
    """The config document, camelCase (default: the chart's defaults); known at construction, not a secret."""
    wait_for_daemonsets: NotRequired[bool]
    """Wait for DaemonSet rollouts during `pulumi up` (default false; never the driver's OnDelete one)."""


def _plain(value: Any) -> Any:
    """The document as plain data: Pulumi sends every number as a float, so whole numbers become ints again."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _has_outputs(value: Any) -> bool:
    if isinstance(value, pulumi.Output):
        return True
    if isinstance(value, Mapping):
        return any(_has_outputs(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_outputs(item) for item in value)
    return False


def known_document(value: Any) -> GpuStackConfig:
    """The validated config from the `config` input; raises ConfigError listing every problem (an output where the
    document or a part of it belongs is one)."""
    if _has_outputs(value):
        raise ConfigError([Problem("", _NOT_KNOWN)], CONFIG_SOURCE)
    return parse_config(_plain(value) if value is not None else None, source=CONFIG_SOURCE)


class GpuOperator(pulumi.ComponentResource):
    """NVIDIA GPU Operator's operand DaemonSets and their objects on one cluster, from one config document."""

    namespace: pulumi.Output[str]
    """Namespace of the namespaced operand objects."""
    gpu_resource_names: pulumi.Output[list[str]]
    """Extended resources workloads request (`nvidia.com/gpu`, shared and MIG names the config fixes)."""
    node_selector_labels: pulumi.Output[dict[str, str]]
    """Node labels the operands select on; GPU nodes must carry them."""
    runtime_class_name: pulumi.Output[str | None]
    """RuntimeClass that GPU pods use (absent with the NRI plugin)."""
    daemonset_names: pulumi.Output[list[str]]
    """Names of the operand DaemonSets, in state order."""

    def __init__(self, name: str, args: GpuOperatorInputs, opts: pulumi.ResourceOptions | None = None) -> None:
        kubeconfig = required(args, "kubeconfig", (str, pulumi.Output), f"GpuOperator({name!r})",
                              "the target cluster's kubeconfig")
        config = known_document(args.get("config"))
        super().__init__(TOKEN, name, {}, opts)
        secret_kubeconfig = pulumi.Output.secret(kubeconfig)
        self.kubernetes_provider: k8s.Provider = kubernetes_provider(
            f"{name}-kubernetes", secret_kubeconfig, opts=pulumi.ResourceOptions(parent=self))
        self.operator: OperatorComponent = OperatorComponent(
            name,
            {"provider": self.kubernetes_provider, "config": config, "kubeconfig": secret_kubeconfig,
             "wait_for_daemonsets": bool(args.get("wait_for_daemonsets", False))},
            pulumi.ResourceOptions(parent=self),
        )
        self.namespace = self.operator.namespace
        self.gpu_resource_names = self.operator.gpu_resource_names
        self.node_selector_labels = self.operator.node_selector_labels
        self.runtime_class_name = self.operator.runtime_class_name
        self.daemonset_names = self.operator.daemonset_names
        self.register_outputs({
            "namespace": self.namespace,
            "gpuResourceNames": self.gpu_resource_names,
            "nodeSelectorLabels": self.node_selector_labels,
            "runtimeClassName": self.runtime_class_name,
            "daemonsetNames": self.daemonset_names,
        })
