"""`NetworkOperator`: NVIDIA's Network Operator and the RDMA wiring of InfiniBand nodes, in the order that works.

1. the namespace (PSA `privileged`);
2. the network-operator Helm chart (`helm.v4.Chart`, pinned to `network.chartVersion`; every object its own
   Pulumi resource), which brings the operator, its CRDs and the one NFD of the cluster;
3. the NodeFeatureRule labelling InfiniBand VFs (`feature.node.kubernetes.io/pci-15b3.present`), after the
   chart, whose NFD CRDs it needs;
4. the NicClusterPolicy `nic-cluster-policy`, after the rule (its node affinity keys off that label);
5. the IPoIB IPPool and IPoIBNetwork, after the policy that installs nv-ipam and the IPoIB CNI; the IPPool also
   after a :class:`CrdEstablished` child that waits (with the `kubeconfig` argument) for the IPPool CRD, which
   the operator creates only when it reconciles the policy.

Give the GPU operator `depends_on=[network_operator]` (GpuCluster does): it is then created once the
NicClusterPolicy exists, so its driver never starts before the MOFED driver container is scheduled. By default
`pulumi up` does not wait for MOFED being loaded on each node (the operator compiles it there, minutes later;
the legacy peermem sidecar waits for it on the node, `/run/mellanox/drivers/.driver-ready`). With
`network.waitForMofed` (and the `kubeconfig` argument), a :class:`MofedReadiness` child waits, after the policy,
until every InfiniBand node carries `network.nvidia.com/operator.mofed.wait=false` (the label Azure's scripts
poll; at least the IB pools' initial node count, up to `network.mofedTimeoutSeconds`), so whatever depends on
this component, the GPU operator included, waits for MOFED on every InfiniBand node; `mofed_ready` says which of
the two happened.
The objects come from :func:`gpu_operator.render.network.render_network`; this component only registers them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpu_operator.components.component_args import required
from gpu_operator.components.kubernetes_objects import child_options, register_chart, register_object
from gpu_operator.components.crd_readiness import CrdEstablished
from gpu_operator.components.mofed_readiness import MofedReadiness
from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.readiness import DriverImage
from gpu_operator.render.network import render_network

__all__ = ["NetworkOperator", "NetworkOperatorArgs", "TOKEN"]

TOKEN = "gpu-operator:index:NetworkOperator"
#: The nv-ipam IPPool's CRD, which the Network Operator creates at runtime (its chart does not ship it).
IP_POOL_CRD = "ippools.nv-ipam.nvidia.com"


def _digest(obj: Mapping[str, Any]) -> str:
    """A digest of a rendered object's spec: MOFED readiness is waited for again when it changes."""
    return hashlib.sha256(json.dumps(obj.get("spec", {}), sort_keys=True).encode()).hexdigest()[:16]


def _driver_image(config: GpuStackConfig) -> DriverImage | None:
    """The DOCA-OFED driver the NicClusterPolicy asks for; None with the host's MOFED (no driver pods)."""
    if config.network.mofed != "operator":
        return None
    image = config.network.ofed_driver.image
    return DriverImage(image.repository, image.image, image.version)


class NetworkOperatorArgs(TypedDict):
    """Inputs of a NetworkOperator."""

    config: GpuStackConfig | Mapping[str, Any]
    """The config document; its `network` section (on by default with InfiniBand pools)."""
    provider: k8s.Provider
    """The Kubernetes provider of the target cluster."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """The cluster's kubeconfig (the provider's): needed with `network.waitForMofed`, to read the nodes' labels."""


class NetworkOperator(pulumi.ComponentResource):
    """The Network Operator chart, the InfiniBand NodeFeatureRule, the NicClusterPolicy and the IPoIB network."""

    namespace: pulumi.CustomResource
    chart: k8s.helm.v4.Chart
    node_feature_rule: pulumi.CustomResource
    nic_cluster_policy: pulumi.CustomResource
    ipoib: list[pulumi.CustomResource]
    mofed_readiness: MofedReadiness | None
    ip_pool_crd: CrdEstablished | None
    """With an nv-ipam IPPool and the kubeconfig: created once the IPPool CRD is established; the IPPool waits."""
    """With `network.waitForMofed`: the resource created once MOFED is ready on every InfiniBand node."""
    mofed_ready: pulumi.Output[bool]
    """With `network.waitForMofed`: true once every InfiniBand node reported MOFED ready
    (`network.nvidia.com/operator.mofed.wait=false`); a resource that depends on this component waits for it.
    Without it: false, known once the policy exists (nothing waited for MOFED)."""
    rdma_resource_names: pulumi.Output[list[str]]
    """The RDMA extended resources pods can request (`rdma/ib`, `rdma/shared_ib`)."""

    def __init__(self, name: str, args: NetworkOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"NetworkOperator({name!r})"
        provider = required(args, "provider", k8s.Provider, where, "a pulumi_kubernetes.Provider for the cluster")
        config = parse_config(required(args, "config", (GpuStackConfig, Mapping), where, "the config document"))
        rendered = render_network(config)
        if rendered is None:
            raise ConfigError([Problem("network.enabled", "the Network Operator is off for this config (no pool has "
                                                          "InfiniBand, or network.enabled: false); set "
                                                          "network.enabled: true or do not create a NetworkOperator")])
        kubeconfig = args.get("kubeconfig")
        if config.network.wait_for_mofed and kubeconfig is None:
            raise ConfigError([Problem("network.waitForMofed", f"{where} needs the cluster's kubeconfig to read the "
                                                               "nodes' MOFED labels; pass args['kubeconfig'] (the "
                                                               "provider's) or set network.waitForMofed: false")])
        super().__init__(TOKEN, name, {}, opts)
        options = child_options(self, provider, opts)

        self.namespace = register_object(name, rendered.namespace, options())
        spec = rendered.chart
        self.chart = register_chart(name, spec, options(self.namespace))
        self.node_feature_rule = register_object(name, rendered.node_feature_rule, options(self.chart))
        policy = rendered.nic_cluster_policy
        self.nic_cluster_policy = register_object(name, policy, options(self.node_feature_rule))
        self.mofed_readiness = None
        if config.network.wait_for_mofed:
            ib_pools = [pool for pool in config.pools if pool.has_infiniband]
            self.mofed_readiness = MofedReadiness(
                f"{name}-mofed-ready",
                kubeconfig,
                pools=[pool.name for pool in ib_pools],
                expected_nodes=sum(pool.initial_count for pool in ib_pools),
                policy_digest=_digest(policy),
                timeout_seconds=config.network.mofed_timeout_seconds,
                mofed_image=_driver_image(config),
                namespace=config.network.namespace,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.nic_cluster_policy],
                                            deleted_with=opts.deleted_with if opts is not None else None),
            )
            self.mofed_ready = self.mofed_readiness.ready
        else:
            self.mofed_ready = self.nic_cluster_policy.id.apply(lambda _: False)
        self.ip_pool_crd = None
        if any(obj["kind"] == "IPPool" for obj in rendered.ipoib):
            if kubeconfig is not None:
                self.ip_pool_crd = CrdEstablished(
                    f"{name}-ippool-crd", kubeconfig, IP_POOL_CRD,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[self.nic_cluster_policy],
                                                deleted_with=opts.deleted_with if opts is not None else None))
            else:
                pulumi.log.warn(
                    f"the IPPool waits for its CRD ({IP_POOL_CRD}, which the Network Operator creates once it "
                    "reconciles the NicClusterPolicy) only through the Kubernetes provider's create retries, about "
                    "31 s: pass args['kubeconfig'] so the IPPool is created once the CRD is established",
                    resource=self)
        self.ipoib = []
        for obj in rendered.ipoib:
            after = [self.nic_cluster_policy, *self.ipoib]
            if obj["kind"] == "IPPool" and self.ip_pool_crd is not None:
                after.append(self.ip_pool_crd)
            self.ipoib.append(register_object(name, obj, options(*after)))
        network = config.network
        resources = [
            plugin.resource
            for kind, plugin in (("sriov", network.sriov_device_plugin), ("shared", network.rdma_shared_device_plugin))
            if kind in network.device_plugins
        ]
        self.rdma_resource_names = pulumi.Output.from_input(resources)
        pulumi.log.info(
            f"Node Feature Discovery runs once, from the network-operator chart {spec.version} (it labels the GPU "
            f"nodes too); the GPU operator's NFD is off. RDMA resources: {', '.join(resources) or 'none'}; they "
            "appear on a node once MOFED is loaded there (network.nvidia.com/operator.mofed.wait=false)",
            resource=self,
        )
        self.register_outputs({"chartVersion": spec.version, "rdmaResourceNames": self.rdma_resource_names,
                               "mofedReady": self.mofed_ready})
