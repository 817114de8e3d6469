"""`GpuNodePool`: one AKS GPU node pool (an `AgentPool`), shaped for the GPU operator.

The pool comes from the config document's `pools` section and is rendered by
:func:`gpu_operator.render.aks.agent_pool.agent_pool_properties`: `gpuProfile.driver = None` when the operator
owns the driver, scale-down mode Delete, the pool's taints, and node labels that seed what the operands select
(`nvidia.com/gpu.present`, the `nvidia.com/gpu.deploy.*` labels of its workload, `nvidia.com/mig.config`,
`nvidia.com/device-plugin.config`). The agent pool name is pinned to the pool's name.

What the engine does with it: the pool is `protect`ed by default (`aks.protect`), so a change that forces a
replace (AKS deletes the pool and every GPU node first) is refused instead of carried out, and a preview warns
before any delete (:mod:`.outage_warning`). An autoscaled pool ignores changes of `count`: the autoscaler owns
the node count once the pool exists, and sending the configured count on every update would fight it.

Outputs tell workloads how to land on the pool: the labels its nodes carry, the AKS pool label to select
(`kubernetes.azure.com/agentpool`) and the tolerations its taints require.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_azure_native as azure_native
from pulumi_azure_native import containerservice

from gpu_operator.components.azure_args import agent_pool_args
from gpu_operator.components.component_args import required
from gpu_operator.components.outage_warning import OutageGuard
from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.render.aks.agent_pool import agent_pool_properties

__all__ = ["GpuNodePool", "GpuNodePoolArgs", "TOKEN", "AGENT_POOL", "AGENT_POOL_LABEL", "REPLACING_PROPERTIES",
           "agent_pool_identity"]

TOKEN = "gpu-operator:index:GpuNodePool"
#: The label AKS puts on every node with the name of its pool.
AGENT_POOL_LABEL = "kubernetes.azure.com/agentpool"
#: ARM properties of an agent pool that AKS cannot change in place: a change replaces the pool (or is refused).
REPLACING_PROPERTIES = ("vmSize", "osType", "osSKU", "availabilityZones", "vnetSubnetID", "podSubnetID",
                        "osDiskSizeGB", "osDiskType", "gpuProfile", "enableEncryptionAtHost", "kubeletDiskType")
AGENT_POOL = "azure-native:containerservice:AgentPool"


def agent_pool_identity(resource_group: str, cluster: str, pool: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """What, changed, makes the engine replace an agent pool (or AKS refuse the update)."""
    identity: dict[str, Any] = {"resourceGroup": resource_group, "cluster": cluster, "name": pool}
    identity.update({key: properties[key] for key in REPLACING_PROPERTIES if key in properties})
    return identity


class GpuNodePoolArgs(TypedDict):
    """Inputs of a GpuNodePool."""

    config: GpuStackConfig | Mapping[str, Any]
    """The config document; its `pools` section defines the pool, its operator sections shape the labels."""
    pool: str
    """Name of the pool (in `pools`) to create."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    cluster_name: pulumi.Input[str]
    """Name of the AKS cluster the pool joins."""
    azure_provider: azure_native.Provider
    """The Azure provider the agent pool is created with."""
    rendered_operands: NotRequired[frozenset[str]]
    """The operands the config renders (deploy-label suffixes); computed when not given (GpuCluster passes it)."""


def _resources(depends_on: Any) -> list[pulumi.Resource]:
    if depends_on is None:
        return []
    return [depends_on] if isinstance(depends_on, pulumi.Resource) else list(depends_on)


class GpuNodePool(pulumi.ComponentResource):
    """An AKS agent pool of GPU nodes, labelled and tainted for the GPU operator."""

    pool_name: pulumi.Output[str]
    """The AKS pool name; resolves once the pool exists."""
    node_labels: pulumi.Output[dict[str, str]]
    """Labels every node of the pool carries from creation."""
    node_selector: pulumi.Output[dict[str, str]]
    """A node selector that lands a pod on this pool."""
    tolerations: pulumi.Output[list[dict[str, str]]]
    """Tolerations a pod needs for the pool's taints."""
    agent_pool: containerservice.AgentPool
    outage_guard: OutageGuard

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        azure = required(args, "azure_provider", azure_native.Provider, f"GpuNodePool({name!r})",
                         "a pulumi_azure_native.Provider for the cluster's subscription")
        config = parse_config(required(args, "config", (GpuStackConfig, Mapping), f"GpuNodePool({name!r})",
                                     "the config document (a mapping)"))
        try:
            pool = config.pool(args["pool"])
        except KeyError as error:
            raise ConfigError([Problem("pools", str(error.args[0]))]) from None
        properties = agent_pool_properties(pool, config, args.get("rendered_operands"))
        super().__init__(TOKEN, name, {"pool": pool.name}, opts)
        deleted_with = opts.deleted_with if opts else None
        # only plain config values identify the pool: an unknown in preview would hide a change
        cluster = config.aks.cluster_name if config.aks is not None else ""
        group = config.aks.resource_group if config.aks is not None else ""
        self.outage_guard = OutageGuard(name, AGENT_POOL, {
            f"{name}-agentpool": agent_pool_identity(group, cluster, pool.name, properties),
        }, pulumi.ResourceOptions(parent=self, deleted_with=deleted_with))
        self.agent_pool = containerservice.AgentPool(
            f"{name}-agentpool",
            resource_group_name=args["resource_group_name"],
            resource_name_=args["cluster_name"],
            agent_pool_name=pool.name,
            **agent_pool_args(properties),
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=azure,
                # the component's depends_on would not reach the pool otherwise (children do not inherit it)
                depends_on=[*_resources(opts.depends_on if opts else None), self.outage_guard.stash],
                deleted_with=deleted_with,
                protect=config.aks.protect if config.aks is not None else True,
                ignore_changes=["count"] if pool.autoscale is not None else None,
            ),
        )
        self.pool_name = self.agent_pool.id.apply(lambda _: pool.name)
        self.node_labels = pulumi.Output.from_input(properties["nodeLabels"])
        self.node_selector = pulumi.Output.from_input({AGENT_POOL_LABEL: pool.name})
        self.tolerations = pulumi.Output.from_input([taint.toleration for taint in pool.node_taints])
        self.register_outputs({
            "poolName": self.pool_name,
            "nodeLabels": self.node_labels,
            "nodeSelector": self.node_selector,
            "tolerations": self.tolerations,
        })
