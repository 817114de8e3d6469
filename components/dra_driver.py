"""`DraDriver`: NVIDIA's DRA driver for the pools that allocate GPUs through DRA, in the order that works.

1. the namespace (PSA `privileged`: the kubelet plugin is a privileged host pod);
2. the dra-driver-nvidia-gpu Helm chart (`helm.v4.Chart`, pinned to 0.4.1; every object its own Pulumi
   resource): controller, kubelet plugin on the nodes labelled `nvidia.com/dra-kubelet-plugin=true`,
   DeviceClasses, ComputeDomain CRDs;
3. `dra.claimTemplates` as ResourceClaimTemplates, after the chart, whose DeviceClasses they name, and after the
   namespaces `dra.namespaces` asks the stack to create for them (`create`).

Give it `depends_on=[operator]` (GpuCluster does): the kubelet plugin reads the driver the operator installs
under `/run/nvidia/driver`. The pools' labels (`nvidia.com/gpu.deploy.device-plugin=false` on DRA pools) come
from the pools themselves, so the device plugin never advertises the GPUs DRA allocates. The objects come from
:func:`gpu_operator.render.dra.render_dra`; this component only registers them.
"""

from __future__ import annotations

from typing import Any, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.component_args import required
from gpu_operator.components.kubernetes_objects import child_options, register_chart, register_object
from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.config.dra import dra_node_pools
from gpu_operator.facts.dra_driver import DEVICE_CLASSES
from gpu_operator.render.dra import render_dra

__all__ = ["DraDriver", "DraDriverArgs", "TOKEN"]

TOKEN = "gpu-operator:index:DraDriver"


class DraDriverArgs(TypedDict):
    """Inputs of a DraDriver."""

    config: GpuStackConfig | Mapping[str, Any]
    """The config document; its `dra` section and the pools with `gpuAllocation: dra`."""
    provider: k8s.Provider
    """The Kubernetes provider of the target cluster."""


class DraDriver(pulumi.ComponentResource):
    """The DRA driver chart and the claim templates of the config."""

    namespace: pulumi.CustomResource
    chart: k8s.helm.v4.Chart
    claim_namespaces: list[pulumi.CustomResource]
    claim_templates: list[pulumi.CustomResource]
    device_classes: pulumi.Output[list[str]]
    """The DeviceClasses the chart creates, for ResourceClaims to name."""

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"DraDriver({name!r})"
        provider = required(args, "provider", k8s.Provider, where, "a pulumi_kubernetes.Provider for the cluster")
        config = parse_config(required(args, "config", (GpuStackConfig, Mapping), where, "the config document"))
        rendered = render_dra(config)
        if rendered is None:
            raise ConfigError([Problem("dra.enabled", "DRA is off for this config (no pool has gpuAllocation: dra); "
                                                      "set gpuAllocation: dra on a pool, or do not create a "
                                                      "DraDriver")])
        super().__init__(TOKEN, name, {}, opts)
        options = child_options(self, provider, opts)
        # a component's depends_on does not reach its children: the first ones wait for what it was given
        given = opts.depends_on if opts is not None else None
        after: list[Any] = [given] if isinstance(given, pulumi.Resource) else list(given or [])  # type: ignore

        self.namespace = register_object(name, rendered.namespace, options(*after))
        spec = rendered.chart
        self.chart = register_chart(name, spec, options(self.namespace))
        # namespaces the config asks the stack to create for its claim templates (`existing` ones are the cluster's)
        self.claim_namespaces = [register_object(name, obj, options(*after)) for obj in rendered.claim_namespaces]
        self.claim_templates = [register_object(name, obj, options(self.chart, *self.claim_namespaces))
                                for obj in rendered.claim_templates]
        classes = [cls for cls, on in (("gpus", config.dra.gpus), ("computeDomains", config.dra.compute_domains))
                   if on]
        self.device_classes = pulumi.Output.from_input([c.name for c in DEVICE_CLASSES if c.resources in classes])
        pools = ", ".join(pool.name for pool in dra_node_pools(config.dra, config.pools))
        where = f"pools {pools}" if pools else "nodes labelled nvidia.com/dra-kubelet-plugin=true"
        pulumi.log.info(f"DRA driver chart {spec.version}: kubelet plugin on {where}, driver root "
                        f"{spec.values['nvidiaDriverRoot']}", resource=self)
        self.register_outputs({"chartVersion": spec.version, "deviceClasses": self.device_classes})
