"""The labels and taints a GPU pool stamps on its nodes, so the operands find them from the first boot.

NVIDIA's operator labels GPU nodes at runtime: `nvidia.com/gpu.present=true` once NFD sees an NVIDIA PCI device,
then one `nvidia.com/gpu.deploy.<operand>=true` per operand the node's workload config calls for, and
`nvidia.com/mig.config` (the layout the MIG manager applies) on MIG-capable nodes. Here no labelling controller
runs, so a pool carries those labels from creation:

* `nvidia.com/gpu.present=true`;
* the deploy labels of the pool's workload config (NVIDIA's sets: `container` runs the driver, toolkit, device
  plugin, DCGM, exporter, GFD, node status exporter and validator, plus the MIG manager on MIG-capable GPUs;
  `vm-passthrough` and `vm-vgpu` run the sandbox operands), limited to the operands actually rendered, plus
  `client` (which NVIDIA sets on every GPU node for third-party GPU clients);
* `nvidia.com/gpu.workload.config=<workload>` when sandbox workloads are enabled;
* `nvidia.com/mig.config`: the pool's `migConfig`, else `migManager.config.default`, on MIG-capable pools;
* `nvidia.com/device-plugin.config`: the pool's `devicePluginConfig`, when it names one;
* with DRA (`gpuAllocation: dra`): `nvidia.com/gpu.deploy.device-plugin=false`, so the device plugin never
  advertises the GPUs DRA allocates, and `nvidia.com/dra-kubelet-plugin=true` where the DRA driver's kubelet
  plugin runs (see :func:`gpu_operator.config.dra.dra_node_pools`).

The pool's own `labels` come first; none of them may be one of these (the config rejects that).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any
from collections.abc import Iterable, Mapping

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import dra_node_pools
from gpu_operator.config.node_metadata import (
    DEPLOY_LABEL_PREFIX,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DRA_KUBELET_PLUGIN_LABEL,
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    WORKLOAD_CONFIG_LABEL,
)
from gpu_operator.config.pools import GpuPool, Workload
from gpu_operator.render.workload_facts import deploy_node_labels

__all__ = ["WORKLOAD_OPERANDS", "CLIENT", "rendered_deploy_operands", "pool_mig_config", "pool_node_labels", "pool_taints"]

#: The operands (deploy-label suffixes) NVIDIA's labeller enables per workload config.
WORKLOAD_OPERANDS: Mapping[Workload, tuple[str, ...]] = MappingProxyType({
    "container": (
        "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter",
        "node-status-exporter", "operator-validator",
    ),
    "vm-passthrough": (
        "sandbox-device-plugin", "kata-sandbox-device-plugin", "sandbox-validator", "vfio-manager", "cc-manager",
    ),
    "vm-vgpu": ("sandbox-device-plugin", "vgpu-manager", "vgpu-device-manager", "sandbox-validator", "cc-manager"),
})
#: Set on every GPU node whatever its workload (third-party GPU clients select it).
CLIENT = "client"
_MIG_MANAGER = "mig-manager"


def rendered_deploy_operands(objects: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The operands (deploy-label suffixes) that the rendered DaemonSets select nodes by."""
    labels = deploy_node_labels(objects)
    return frozenset(key.removeprefix(DEPLOY_LABEL_PREFIX) for key in labels if key.startswith(DEPLOY_LABEL_PREFIX))


def _deploy_operands(pool: GpuPool, rendered: frozenset[str]) -> list[str]:
    hardware = pool.hardware
    wanted = list(WORKLOAD_OPERANDS[pool.workload])
    if pool.workload == "container" and hardware is not None and hardware.gpu.mig_capable:
        wanted.append(_MIG_MANAGER)
    return [operand for operand in wanted if operand in rendered] + [CLIENT]


def pool_mig_config(pool: GpuPool, config: GpuStackConfig) -> str | None:
    """The MIG layout the pool's nodes start with (None where no MIG manager runs)."""
    hardware, manager = pool.hardware, config.operator.mig_manager
    if pool.workload != "container" or hardware is None or not hardware.gpu.mig_capable or not manager.enabled:
        return None
    return pool.mig_config or manager.config.default or None


def pool_node_labels(pool: GpuPool, config: GpuStackConfig, rendered: frozenset[str]) -> dict[str, str]:
    """Every label the pool's nodes carry from creation (`rendered`: see :func:`rendered_deploy_operands`)."""
    labels = dict(pool.labels)
    labels[GPU_PRESENT_LABEL] = "true"
    labels.update({f"{DEPLOY_LABEL_PREFIX}{operand}": "true" for operand in _deploy_operands(pool, rendered)})
    if config.operator.sandbox_workloads.enabled:
        labels[WORKLOAD_CONFIG_LABEL] = pool.workload
    mig_config = pool_mig_config(pool, config)
    if mig_config is not None:
        labels[MIG_CONFIG_LABEL] = mig_config
    if pool.device_plugin_config is not None:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.device_plugin_config
    if pool.gpu_allocation == "dra":
        labels[f"{DEPLOY_LABEL_PREFIX}device-plugin"] = "false"
    if any(dra_pool.name == pool.name for dra_pool in dra_node_pools(config.dra, config.pools)):
        labels[DRA_KUBELET_PLUGIN_LABEL] = "true"
    return labels


def pool_taints(pool: GpuPool) -> list[str]:
    """The pool's taints in AKS's `key=value:Effect` form."""
    return [taint.text for taint in pool.node_taints]
