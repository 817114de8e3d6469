"""Pod settings for GPUDirect RDMA workloads, from the pool they run on.

A pod that uses InfiniBand with its GPUs needs more than `nvidia.com/gpu`: an RDMA resource from one of the
Network Operator's device plugins (`rdma/ib`, one unit per InfiniBand VF, from the SR-IOV plugin; or
`rdma/shared_ib: 1`, all HCAs shared, from the shared plugin), the `IPC_LOCK` capability (RDMA pins memory; the
default memlock limit is 64 KiB), a memory-backed `/dev/shm` (NCCL's intra-node buffers), the pool's node
selector and tolerations, and NCCL/UCX settings that keep traffic on InfiniBand with GPUDirect. On ND v4 and ND v5
pools NCCL also gets the VM's real PCIe layout (`NCCL_TOPO_FILE`, mounted from the ConfigMap `nvidia-topology`
that :meth:`RdmaWorkload.config_maps` gives, :mod:`gpu_operator.workloads.nccl_topology`), as Azure's jobs do:
without it NCCL misreads the virtualised topology and runs below line rate. Extended
resources are requested with requests equal to limits, as device plugins require. Containers and pod specs come
in the form the API server stores (:mod:`gpu_operator.render.stored`): `shm_size="16384Mi"` reads `16Gi`.

:func:`rdma_workload` checks the request against the pool (GPU count, NIC count, whether the plugin is deployed)
and raises :class:`~gpu_operator.config.ConfigError` naming the argument and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gpu_operator.config import ConfigError, GpuStackConfig, Problem
from gpu_operator.config.network import network_wanted
from gpu_operator.render.stored import as_stored
from gpu_operator.workloads.nccl_topology import (
    TOPOLOGY_CONFIG_MAP,
    TOPOLOGY_DIRECTORY,
    TOPOLOGY_FILE,
    NcclTopology,
    nccl_topology,
)

__all__ = ["AGENT_POOL_LABEL", "NCCL_ENV", "RdmaWorkload", "rdma_workload"]

#: The label AKS puts on every node with the name of its pool.
AGENT_POOL_LABEL = "kubernetes.azure.com/agentpool"
#: NCCL and UCX over InfiniBand with GPUDirect RDMA (Azure's settings for ND-series VMs).
NCCL_ENV: dict[str, str] = {
    "NCCL_IB_DISABLE": "0",
    "NCCL_NET_GDR_LEVEL": "SYS",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "UCX_IB_PCI_RELAXED_ORDERING": "on",
    "UCX_TLS": "rc",
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
}
SHM_VOLUME = "dshm"
TOPOLOGY_VOLUME = "nvidia-topology"
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class RdmaWorkload:
    """What a GPUDirect RDMA container and its pod need on one pool."""

    resources: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    env: dict[str, str]
    annotations: dict[str, str] = field(default_factory=dict)
    shm_size: str = "16Gi"
    topology: NcclTopology | None = None
    """The pool's PCIe layout for NCCL (ND v4, ND v5), mounted at `NCCL_TOPO_FILE`; None: NCCL discovers it."""

    def config_maps(self, namespace: str = "default") -> list[dict[str, Any]]:
        """The ConfigMaps the pods need in `namespace` (the NCCL topology), to create with them."""
        return [self.topology.config_map(namespace)] if self.topology is not None else []

    def container(self, name: str, image: str, *, command: list[str] | None = None,
                  args: list[str] | None = None) -> dict[str, Any]:
        """A container with the RDMA resources, `IPC_LOCK`, `/dev/shm` and the NCCL/UCX environment."""
        container: dict[str, Any] = {
            "name": name,
            "image": image,
            "resources": {"requests": dict(self.resources), "limits": dict(self.resources)},
            "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
            "env": [{"name": key, "value": value} for key, value in self.env.items()],
            "volumeMounts": [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}],
        }
        if self.topology is not None:
            container["volumeMounts"].append(
                {"name": TOPOLOGY_VOLUME, "mountPath": TOPOLOGY_DIRECTORY, "readOnly": True})
        if command is not None:
            container["command"] = list(command)
        if args is not None:
            container["args"] = list(args)
        return as_stored(container)

    def pod_spec(self, containers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """A pod spec placing `containers` on the pool, with the memory-backed `/dev/shm` volume (and the NCCL
        topology's ConfigMap volume)."""
        volumes: list[dict[str, Any]] = [
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": self.shm_size}}]
        if self.topology is not None:
            volumes.append({"name": TOPOLOGY_VOLUME, "configMap": {"name": TOPOLOGY_CONFIG_MAP}})
        return as_stored({
            "nodeSelector": dict(self.node_selector),
            "tolerations": [dict(t) for t in self.tolerations],
            "containers": containers,
            "volumes": volumes,
            **extra,
        })

    def pod(self, name: str, image: str, *, namespace: str = "default", command: list[str] | None = None,
            args: list[str] | None = None) -> dict[str, Any]:
        """A whole Pod manifest with one such container."""
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": self.pod_spec([self.container(name, image, command=command, args=args)],
                                  restartPolicy="Never"),
        }


def rdma_workload(
    config: GpuStackConfig,
    pool: str,
    *,
    device_plugin: Literal["sriov", "shared"] = "sriov",
    gpus: int | None = None,
    rdma_devices: int | None = None,
    ipoib: bool = False,
) -> RdmaWorkload:
    """The settings for a pod on `pool` using `gpus` GPUs (default: all of a node's) and RDMA.

    With the SR-IOV plugin the pod gets `rdma_devices` InfiniBand VFs (default: one per GPU, at most the node's
    NICs); with the shared plugin, one `rdma/shared_ib` slot that exposes every HCA. `ipoib` attaches the pod to
    the IPoIB network and points NCCL's bootstrap at it (`net1`).
    """
    try:
        target = config.pool(pool)
    except KeyError as error:
        raise ConfigError([Problem("pool", str(error.args[0]))], "rdma_workload") from None
    problems: list[Problem] = []
    hardware = target.hardware
    network = config.network
    if hardware is None or hardware.infiniband is None:
        raise ConfigError([Problem("pool", f"pool {pool!r} ({target.vm_size}) has no InfiniBand: choose an "
                                           "ND-series pool")], "rdma_workload")
    if not network_wanted(network, config.pools):
        problems.append(Problem("network.enabled", "the Network Operator is off, so no RDMA device plugin runs"))
    elif device_plugin not in network.device_plugins:
        problems.append(Problem("device_plugin", f"{device_plugin!r} is not deployed (network.devicePlugins: "
                                                 f"{', '.join(network.device_plugins)}): add it there or use one "
                                                 "of those"))
    gpu_count = hardware.gpu_count if gpus is None else gpus
    if not 0 <= gpu_count <= hardware.gpu_count:
        problems.append(Problem("gpus", f"{gpu_count} GPUs requested, a {target.vm_size} node has "
                                        f"{hardware.gpu_count}"))
    nics = hardware.infiniband.nics
    resources = {GPU_RESOURCE: str(gpu_count)} if gpu_count else {}
    if device_plugin == "sriov":
        devices = min(max(gpu_count, 1), nics) if rdma_devices is None else rdma_devices
        if not 1 <= devices <= nics:
            problems.append(Problem("rdma_devices", f"{devices} {network.sriov_device_plugin.resource} requested, "
                                                    f"a {target.vm_size} node has {nics} InfiniBand NICs: request "
                                                    f"1 to {nics}"))
        resources[network.sriov_device_plugin.resource] = str(devices)
    else:
        if rdma_devices is not None:
            problems.append(Problem("rdma_devices", "the shared plugin gives every pod all HCAs for one "
                                                    f"{network.rdma_shared_device_plugin.resource}: leave it unset"))
        resources[network.rdma_shared_device_plugin.resource] = "1"
    annotations: dict[str, str] = {}
    env = dict(NCCL_ENV)
    topology = nccl_topology(target.vm_size)
    if topology is not None:
        env["NCCL_TOPO_FILE"] = TOPOLOGY_FILE
    if ipoib:
        if network.ipoib is None:
            problems.append(Problem("ipoib", "no IPoIB network is configured: set network.ipoib"))
        else:
            annotations["k8s.v1.cni.cncf.io/networks"] = network.ipoib.name
            env["NCCL_SOCKET_IFNAME"] = "net1"
    if problems:
        raise ConfigError(problems, "rdma_workload")
    return RdmaWorkload(
        resources=resources,
        node_selector={AGENT_POOL_LABEL: target.name},
        tolerations=[dict(taint.toleration) for taint in target.node_taints],
        env=env,
        annotations=annotations,
        topology=topology,
    )
