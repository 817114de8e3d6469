"""Simulated nodes: what AKS would register for each pool of a config, plus a CPU node and a bare GPU node.

A pool's nodes get exactly the labels and taints our render gives the pool's ARM agent pool (`nodeLabels`,
`nodeTaints`), beside the labels AKS itself sets (agent pool, instance type, OS, architecture, hostname), and the
pool's GPUs as `nvidia.com/gpu` capacity. Outside the pools: one CPU node (a system pool, no taints) and one GPU
node that no pool describes (no labels beyond the hostname and OS) - a GPU node added to the cluster by other means.
No operand may land on either. Every node carries KWOK's annotation, so KWOK keeps it Ready and runs its pods.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.aks.agent_pool import agent_pool_properties
from tests.e2e.control_plane import KWOK_ANNOTATION

__all__ = ["FLEET_CONFIG", "SimulatedNode", "CPU_NODE", "BARE_GPU_NODE", "fleet_nodes", "node_object", "parse_taint"]

#: The config whose pools the simulated fleet mirrors.
FLEET_CONFIG = Path(__file__).resolve().parent / "fleet.yaml"
CPU_NODE = "aks-system-00000000-vmss000000"
BARE_GPU_NODE = "bare-gpu-0"
_ALLOCATABLE = {"cpu": "96", "memory": "1800Gi", "pods": "110", "ephemeral-storage": "2Ti"}


@dataclass(frozen=True)
class SimulatedNode:
    """One node to register: name, labels, taints and GPU count (None for a node without GPUs)."""

    name: str
    pool: str | None
    labels: dict[str, str]
    taints: list[dict[str, str]]
    gpus: int | None


def parse_taint(text: str) -> dict[str, str]:
    """AKS's `key=value:Effect` (or `key:Effect`) as a Kubernetes taint."""
    key_value, _, effect = text.rpartition(":")
    key, _, value = key_value.partition("=")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def _aks_labels(name: str, pool: str, vm_size: str) -> dict[str, str]:
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.azure.com/agentpool": pool,
        "agentpool": pool,
        "node.kubernetes.io/instance-type": vm_size,
        "type": "kwok",
    }


def fleet_nodes(config: GpuStackConfig) -> list[SimulatedNode]:
    """The nodes of every pool of `config` (its initial count), the CPU node and the bare GPU node."""
    nodes = []
    for pool in config.pools:
        properties = agent_pool_properties(pool, config)
        hardware = pool.hardware
        for index in range(pool.initial_count):
            name = f"aks-{pool.name}-00000000-vmss{index:06d}"
            labels = {**_aks_labels(name, pool.name, pool.vm_size), **properties.get("nodeLabels", {})}
            taints = [parse_taint(text) for text in properties.get("nodeTaints", [])]
            nodes.append(SimulatedNode(name, pool.name, labels, taints, hardware.gpu_count if hardware else None))
    nodes.append(SimulatedNode(CPU_NODE, "system", _aks_labels(CPU_NODE, "system", "Standard_D4s_v5"), [], None))
    bare = {"kubernetes.io/hostname": BARE_GPU_NODE, "kubernetes.io/os": "linux", "type": "kwok"}
    nodes.append(SimulatedNode(BARE_GPU_NODE, None, bare, [], 8))
    return nodes


def node_object(node: SimulatedNode) -> dict[str, Any]:
    """The Node to create; KWOK fills in its conditions and keeps its lease."""
    resources = dict(_ALLOCATABLE)
    if node.gpus is not None:
        resources["nvidia.com/gpu"] = str(node.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": node.labels, "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
        "spec": {"taints": node.taints} if node.taints else {},
        "status": {"capacity": resources, "allocatable": resources},
    }
