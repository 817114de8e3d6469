"""`GpuOperator`: every operand of NVIDIA's GPU operator as Pulumi resources, in NVIDIA's state order.

Instead of a ClusterPolicy reconciled by an in-cluster controller, the operands are rendered from the config and
registered directly: `pulumi preview` shows every DaemonSet, RBAC rule and ConfigMap before anything changes.
One child component per operand (`GpuOperand`), after the pre-requisites (namespace, runtime classes) and, with
`nfd.enabled`, Node Feature Discovery's chart, which comes right after them. On the node, NVIDIA's state order is
kept by the operands' own validation init containers (each waits for the files in `/run/nvidia/validations` the
one before writes), not by the order objects reach the API server, so without `wait_for_daemonsets` the operands
are created side by side, which makes `pulumi up` and `destroy` shorter. With `wait_for_daemonsets`
each operand depends on the one before, as the operator's states do, and `pulumi up` reports them ready in that
order. The config is validated completely before anything is registered: a bad config creates nothing.

DaemonSets are annotated `pulumi.com/skipAwait` by default: a driver build or a MIG reconfiguration routinely takes
longer than Pulumi's await timeouts, and a pool scaled to zero schedules nothing. Set `wait_for_daemonsets` to make
`pulumi up` wait for rollouts instead, except for `OnDelete` DaemonSets (the driver's): nothing rolls them but the
operator controller, whose rollout `controller.waitForDriverRollout` waits for. Services are never awaited (see
`GpuOperand`).

Every object's logical name starts with this component's name, whichever operand holds it. Renaming the component
keeps every object when the rename is declared: `GpuOperator("new", ..., ResourceOptions(aliases=[Alias(name="old")]))`
gives each object an alias under the old name (children do not inherit a parent's aliases by name otherwise).
The names of earlier releases (`<operator>-<operand>-<kind>-...`) are aliases too. A delete (or replace) of a
driver DaemonSet warns in preview: it unloads the driver under running GPU jobs.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
from gpu_operator.components.substitution import substitute
from gpu_operator.components.component_args import ComponentArgsError, required
from gpu_operator.components.driver_rollout import DriverRollout
from gpu_operator.components.node_feature_discovery import NodeFeatureDiscovery
from gpu_operator.components.operand import GpuOperand

from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.render import render_operands
from gpu_operator.render.aks.workload_identity import with_workload_identity
from gpu_operator.render.nfd import nfd_chart
from gpu_operator.render.operands.operator_controller import NAME as CONTROLLER_ACCOUNT
from gpu_operator.render.registry import RenderedOperand
from gpu_operator.render.workload_facts import deploy_node_labels, gpu_resource_names, runtime_class_name

__all__ = ["GpuOperator", "GpuOperatorArgs", "TOKEN"]

TOKEN = "gpu-operator:index:GpuOperator"
_SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
#: Operands whose DaemonSets hold the GPU driver: deleting one is a GPU outage (warned about in preview).
_DRIVER_OPERANDS = frozenset({"driver", "vgpu_manager"})


class GpuOperatorArgs(TypedDict):
    """Inputs of a GpuOperator."""

    provider: k8s.Provider
    """The Kubernetes provider of the target cluster; every object uses it (never an ambient kubeconfig)."""
    config: NotRequired[GpuStackConfig | Mapping[str, Any]]
    """The config document (default: the upstream chart's defaults)."""
    wait_for_daemonsets: NotRequired[bool]
    """Wait for DaemonSet rollouts during `pulumi up` (default false)."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """The target cluster's kubeconfig, for `controller.waitForDriverRollout` (GpuCluster passes its own)."""
    agents_image: NotRequired[pulumi.Input[str] | None]
    """The agents image the operands run instead of the configured reference, e.g. `AgentsImage.image_ref` (by
    digest); needs `agents.image` or `agents.build` in the config."""
    controller_identity: NotRequired[pulumi.Input[str] | None]
    """The client id of the Azure identity the operator controller acts as (`RemediationIdentity.client_id`;
    GpuCluster passes it with `remediation.cloud.provider: azure`): its ServiceAccount is annotated and its pods
    labelled for AKS workload identity."""


def _check_agents_image(config: GpuStackConfig, agents_image: object, component: str) -> None:
    """An override needs an agents image in the config; a build needs someone to carry it out."""
    if agents_image is not None and config.agents.image_source is None:
        raise ComponentArgsError(
            f"{component}: args['agents_image'] is given but the config runs no agent: set agents.image or "
            "agents.build in the config, or leave agents_image out"
        )
    if agents_image is None and config.agents.build is not None:
        raise ConfigError([Problem("agents.build", (
            "GpuOperator does not build the agents image: use GpuCluster (which builds it), or create an "
            "AgentsImage from this section and pass its image_ref as GpuOperator's agents_image"
        ))])


def _rolls_on_delete(obj: Mapping[str, Any]) -> bool:
    """An `OnDelete` DaemonSet (the driver's, under the operator controller) never rolls by itself: awaiting its
    rollout would hang until the provider's timeout; its rollout is the controller's, awaited by
    `controller.waitForDriverRollout`. A driver DaemonSet that rolls by itself (no controller) replaces one node's
    driver at a time, minutes each, which outlasts the provider's timeout as well."""
    driver = obj["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "nvidia-driver"
    return driver or obj["spec"].get("updateStrategy", {}).get("type") == "OnDelete"


def _with_skip_await(operand: RenderedOperand, wait: bool) -> list[dict[str, Any]]:
    """The operand's objects, its DaemonSets annotated not to be awaited (all of them unless `wait`)."""
    objects = []
    for obj in operand.objects:
        if obj["kind"] == "DaemonSet" and (not wait or _rolls_on_delete(obj)):
            obj = copy.deepcopy(obj)
            obj["metadata"].setdefault("annotations", {}).update(_SKIP_AWAIT)
        objects.append(obj)
    return objects


def _old_names(opts: pulumi.ResourceOptions | None) -> list[str]:
    """The names this component had before, from aliases that rename it (`Alias(name=...)`)."""
    aliases = (opts.aliases or []) if opts is not None else []
    return [alias.name for alias in aliases if isinstance(alias, pulumi.Alias) and isinstance(alias.name, str)]


def _resources(depends_on: pulumi.Input[Sequence[pulumi.Input[pulumi.Resource]]] | pulumi.Resource | None) -> list:
    if depends_on is None:
        return []
    if isinstance(depends_on, pulumi.Resource):
        return [depends_on]
    return list(depends_on)  # type: ignore[arg-type]


def _namespace_resource(operand: GpuOperand, name: str) -> pulumi.Resource | None:
    """The operand's Namespace resource for `name`, if it creates that namespace."""
    for resource, obj in zip(operand.resources, operand.objects, strict=True):
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] == name:
            return resource
    return None


def _driver_digest(objects: Sequence[dict[str, Any]]) -> str:
    """A fingerprint of the driver DaemonSets' pod templates: what, changed, starts a rollout."""
    templates = [o["spec"]["template"] for o in objects if o["kind"] == "DaemonSet"
                 and o["spec"]["template"]["metadata"].get("labels", {}).get("app") == "nvidia-driver-daemonset"]
    return hashlib.sha256(json.dumps(templates, sort_keys=True).encode()).hexdigest()


class GpuOperator(pulumi.ComponentResource):
    """The GPU operator's operands for one cluster."""

    namespace: pulumi.Output[str]
    """Namespace of the namespaced operand objects."""
    gpu_resource_names: pulumi.Output[list[str]]
    """Extended resources workloads request (`nvidia.com/gpu`, shared and MIG names where the config fixes them)."""
    node_selector_labels: pulumi.Output[dict[str, str]]
    """Node labels the operands select on; GPU nodes must carry them."""
    runtime_class_name: pulumi.Output[str | None]
    """RuntimeClass that GPU pods use (None with the NRI plugin)."""
    daemonset_names: pulumi.Output[list[str]]
    """Names of the operand DaemonSets, in state order."""
    operands: dict[str, GpuOperand]
    driver_rollout: DriverRollout | None
    """With `controller.waitForDriverRollout`: done once every GPU node runs the newest driver template."""
    node_feature_discovery: NodeFeatureDiscovery | None

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        provider = required(args, "provider", k8s.Provider, f"GpuOperator({name!r})",
                            "a pulumi_kubernetes.Provider for the target cluster")
        config = parse_config(args.get("config"))
        agents_image = args.get("agents_image")
        _check_agents_image(config, agents_image, f"GpuOperator({name!r})")
        if args.get("controller_identity") is not None and not config.controller_enabled:
            raise ComponentArgsError(
                f"GpuOperator({name!r}): args['controller_identity'] is given but the config runs no operator "
                "controller to use it: configure the agents image (agents.image or agents.build), or leave it out")
        if config.controller.wait_for_driver_rollout and args.get("kubeconfig") is None:
            raise ComponentArgsError(
                f"GpuOperator({name!r}): controller.waitForDriverRollout reads the rollout through the API: pass "
                "args['kubeconfig'] (GpuCluster does), or turn waitForDriverRollout off")
        rendered = render_operands(config)
        super().__init__(TOKEN, name, {}, opts)
        wait = args.get("wait_for_daemonsets", False)
        old_names = _old_names(opts)
        deleted_with = opts.deleted_with if opts is not None else None  # children do not inherit it
        chart = nfd_chart(config)
        self.operands = {}
        self.node_feature_discovery = None
        # a component's depends_on never reaches its children: hand it to the first operand
        before: list[pulumi.Resource] = list(_resources(opts.depends_on)) if opts is not None else []
        namespace: pulumi.Resource | None = None  # the Namespace the pre-requisites create, once registered
        for operand in rendered:
            objects = _with_skip_await(operand, wait)
            if args.get("controller_identity") is not None:
                objects = with_workload_identity(objects, CONTROLLER_ACCOUNT, args["controller_identity"])
            if agents_image is not None:
                objects = substitute(objects, config.agents.image.reference, agents_image)
            created = self.operands[operand.key] = GpuOperand(
                f"{name}-{operand.key}",
                {
                    "state": operand.state,
                    "objects": objects,
                    "provider": provider,
                    "name_prefix": name,
                    "alias_prefixes": [
                        f"{name}-{operand.key}", *old_names, *(f"{old}-{operand.key}" for old in old_names)
                    ],
                    "warn_before_delete": operand.key in _DRIVER_OPERANDS,
                    **({"namespace": (config.namespace, namespace)} if namespace is not None else {}),
                },
                pulumi.ResourceOptions(parent=self, depends_on=before or None, deleted_with=deleted_with),
            )
            if operand.key == "prerequisites" and chart is not None:
                self.node_feature_discovery = NodeFeatureDiscovery(
                    f"{name}-node-feature-discovery",
                    {"chart": chart, "provider": provider},
                    pulumi.ResourceOptions(parent=self, depends_on=[created], deleted_with=deleted_with),
                )
            if operand.key == "prerequisites" or wait:  # see the module docstring: the chain only when waiting
                nfd = [self.node_feature_discovery] if self.node_feature_discovery is not None else []
                before = [created, *nfd]
            if namespace is None:
                namespace = _namespace_resource(created, config.namespace)
        all_objects = [obj for operand in rendered for obj in operand.objects]
        self.driver_rollout = self._driver_rollout(name, config, args, all_objects, deleted_with)
        self.namespace = pulumi.Output.from_input(config.namespace)
        self.gpu_resource_names = pulumi.Output.from_input(gpu_resource_names(config))
        self.node_selector_labels = pulumi.Output.from_input(deploy_node_labels(all_objects))
        self.runtime_class_name = pulumi.Output.from_input(runtime_class_name(config))
        self.daemonset_names = pulumi.Output.from_input(
            [o["metadata"]["name"] for o in all_objects if o["kind"] == "DaemonSet"]
        )
        self.register_outputs({
            "namespace": self.namespace,
            "gpuResourceNames": self.gpu_resource_names,
            "nodeSelectorLabels": self.node_selector_labels,
            "runtimeClassName": self.runtime_class_name,
            "daemonsetNames": self.daemonset_names,
        })

    def _driver_rollout(self, name: str, config: GpuStackConfig, args: GpuOperatorArgs,
                        objects: Sequence[dict[str, Any]], deleted_with: Any) -> DriverRollout | None:
        """With `controller.waitForDriverRollout`, a child that waits for the rollout after the operands."""
        kubeconfig = args.get("kubeconfig")
        if not config.controller.wait_for_driver_rollout or kubeconfig is None:
            return None
        return DriverRollout(
            f"{name}-driver-rollout", kubeconfig, config.namespace, _driver_digest(objects),
            config.controller.rollout_timeout_seconds,
            pulumi.ResourceOptions(parent=self, depends_on=list(self.operands.values()), deleted_with=deleted_with))
