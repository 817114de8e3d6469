"""The labels and taints a GPU pool stamps on its nodes, so the operands find them from the first boot.

NVIDIA's operator labels GPU nodes at runtime: `nvidia.com/gpu.present=true` once NFD sees an NVIDIA PCI device,
then one `nvidia.com/gpu.deploy.<operand>=true` per operand the node's workload config calls for, and
`nvidia.com/mig.config` (the layout the MIG manager applies) on MIG-capable nodes. Here no labelling controller
runs, so a pool carries those labels from creation:

* `nvidia.com/gpu.present=true`;
* the deploy labels of the pool's workload config (NVIDIA's sets: `container` runs the driver, toolkit, device
  plugin, DCGM, exporter, GFD, node status exporter and validator, plus the MIG manager on MIG-capable GPUs;
  `vm-passthrough` and `vm-vgpu` run the sandbox operands), NVIDIA's whole set whichever operands are rendered,
  plus `client` (which NVIDIA sets on every GPU node for third-party GPU clients);
* `nvidia.com/gpu.workload.config=<workload>` when sandbox workloads are enabled;
* `nvidia.com/mig.config`: the pool's `migConfig`, else `migManager.config.default`, on MIG-capable pools;
* `nvidia.com/device-plugin.config`: the pool's `devicePluginConfig`, when it names one;
* with `gpuDriver: aks` (AKS installs the driver): `nvidia.com/gpu.deploy.driver=pre-installed`, NVIDIA's value
  for a node whose driver is already there, so the operator's driver DaemonSet never lands on it;
* with DRA (`gpuAllocation: dra`): `nvidia.com/gpu.deploy.device-plugin=false`, so the device plugin never
  advertises the GPUs DRA allocates, and `nvidia.com/dra-kubelet-plugin=true` where the DRA driver's kubelet
  plugin runs (see :func:`gpu_operator.config.dra.dra_node_pools`);
* with a driver of its own (`driver`), or the default NVIDIADriver (`useNvidiaDriverCRD`): the label NVIDIA's
  operator routes a node to its NVIDIADriver with, `nvidia.com/gpu-operator.driver.owner=<name>`, which that
  driver's DaemonSets select (see :mod:`gpu_operator.config.driver_groups`).

The pool's own `labels` come first; none of them may be one of these (the config rejects that).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.dra import dra_node_pools
from gpu_operator.config.driver_groups import pool_driver_name
from gpu_operator.config.node_metadata import (
    DEPLOY_LABEL_PREFIX,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DRA_KUBELET_PLUGIN_LABEL,
    DRIVER_OWNER_LABEL,
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    WORKLOAD_CONFIG_LABEL,
)
from gpu_operator.config.pools import GpuPool
from gpu_operator.labels import (
    CLIENT,
    GPU_PCI_LABELS,
    MIG_CAPABLE_LABEL,
    WORKLOAD_OPERANDS,
    LabellingPolicy,
    apply_changes,
    label_changes,
)
from gpu_operator.render.workload_facts import deploy_node_labels

__all__ = ["WORKLOAD_OPERANDS", "CLIENT", "rendered_deploy_operands", "pool_mig_config", "pool_node_labels", "pool_taints"]


def rendered_deploy_operands(objects: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The operands (deploy-label suffixes) that the rendered DaemonSets select nodes by."""
    labels = deploy_node_labels(objects)
    return frozenset(key.removeprefix(DEPLOY_LABEL_PREFIX) for key in labels if key.startswith(DEPLOY_LABEL_PREFIX))


def labelling_policy(config: GpuStackConfig) -> LabellingPolicy:
    """The node-labelling policy of a config (its sandbox and MIG settings)."""
    sandbox, manager = config.operator.sandbox_workloads, config.operator.mig_manager
    return LabellingPolicy(sandbox.enabled, sandbox.default_workload, manager.enabled, manager.config.default or "",
                           sandbox.mode)


def _observed(pool: GpuPool, config: GpuStackConfig) -> dict[str, str]:
    """What a node of the pool shows before anyone labels it for NVIDIA: NFD's PCI label, GFD's MIG capability
    (known from the pool's GPU), the workload config and the MIG layout the pool asks for."""
    labels = {GPU_PCI_LABELS[0]: "true"}
    hardware = pool.hardware
    if hardware is not None:
        labels[MIG_CAPABLE_LABEL] = "true" if hardware.gpu.mig_capable else "false"
    if config.operator.sandbox_workloads.enabled:
        labels[WORKLOAD_CONFIG_LABEL] = pool.workload
    if pool.mig_config and config.operator.mig_manager.enabled:
        labels[MIG_CONFIG_LABEL] = pool.mig_config
    return labels


def _labelled(pool: GpuPool, config: GpuStackConfig) -> dict[str, str]:
    observed = _observed(pool, config)
    return apply_changes(observed, label_changes(observed, labelling_policy(config)))


def pool_mig_config(pool: GpuPool, config: GpuStackConfig) -> str | None:
    """The MIG layout the pool's nodes start with (None where no MIG manager runs)."""
    return _labelled(pool, config).get(MIG_CONFIG_LABEL)


def pool_node_labels(pool: GpuPool, config: GpuStackConfig, rendered: frozenset[str]) -> dict[str, str]:
    """Every label the pool's nodes carry from creation: NVIDIA's, from the same labelling function the
    controller applies to live nodes, then the pool's own. `rendered` is no longer consulted (NVIDIA labels a
    workload's whole set whichever operands run)."""
    labelled = _labelled(pool, config)
    labels = dict(pool.labels)
    labels.update({key: value for key, value in labelled.items()
                   if key == GPU_PRESENT_LABEL or key.startswith(DEPLOY_LABEL_PREFIX)})
    if config.operator.sandbox_workloads.enabled:
        labels[WORKLOAD_CONFIG_LABEL] = pool.workload
    if MIG_CONFIG_LABEL in labelled:
        labels[MIG_CONFIG_LABEL] = labelled[MIG_CONFIG_LABEL]
    if pool.device_plugin_config is not None:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.device_plugin_config
    if pool.gpu_allocation == "dra":
        labels[f"{DEPLOY_LABEL_PREFIX}device-plugin"] = "false"
    if pool.gpu_driver == "aks":
        # AKS installs the driver: the value NVIDIA's operator gives a node with a pre-installed driver, which it
        # keeps (and which the driver DaemonSet's `=true` selector does not match)
        labels[f"{DEPLOY_LABEL_PREFIX}driver"] = "pre-installed"
    if any(dra_pool.name == pool.name for dra_pool in dra_node_pools(config.dra, config.pools)):
        labels[DRA_KUBELET_PLUGIN_LABEL] = "true"
    owner = pool_driver_name(config, pool) if config.operator.driver.enabled else None
    if owner is not None:
        labels[DRIVER_OWNER_LABEL] = owner
    return labels


def pool_taints(pool: GpuPool) -> list[str]:
    """The pool's taints in AKS's `key=value:Effect` form."""
    return [taint.text for taint in pool.node_taints]
