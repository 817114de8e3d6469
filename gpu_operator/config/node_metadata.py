"""Node labels and taints as AKS node pools carry them, and the rules Kubernetes applies to both.

A node pool stamps the same labels and taints on every node it creates. Taints use AKS's text form,
`key=value:Effect` (the value may be left out: `key:Effect`); the GPU stack turns each into the toleration
operands and workloads need. Label keys and values follow Kubernetes' qualified-name rules, and keys under
`kubernetes.azure.com/` are AKS's own, so a pool cannot set them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from gpu_operator.facts.dra_driver import DRA_NODE_LABEL
from gpu_operator.facts.kube_names import label_value_problem, qualified_name_problem

__all__ = [
    "AKS_LABEL_PREFIX",
    "DEPLOY_LABEL_PREFIX",
    "DEVICE_PLUGIN_CONFIG_LABEL",
    "DRA_KUBELET_PLUGIN_LABEL",
    "DRIVER_OWNER_LABEL",
    "GPU_PRESENT_LABEL",
    "MIG_CONFIG_LABEL",
    "WORKLOAD_CONFIG_LABEL",
    "Taint",
    "TaintEffect",
    "check_label_key",
    "check_label_value",
    "is_derived_label",
    "parse_taint",
]

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
_EFFECTS: tuple[TaintEffect, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")

#: Labels under this prefix are reserved for AKS itself.
AKS_LABEL_PREFIX = "kubernetes.azure.com/"

# NVIDIA's node labels that a GPU pool derives from its definition (see gpu_operator.render.aks.node_labels).
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
#: Nodes where NVIDIA's DRA kubelet plugin runs (pools with gpuAllocation: dra).
DRA_KUBELET_PLUGIN_LABEL = DRA_NODE_LABEL
#: The NVIDIADriver a node's driver comes from (NVIDIA's `consts.NVIDIADriverOwnerLabel`): pools with a driver of
#: their own carry it (see gpu_operator.config.driver_groups).
DRIVER_OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
_DERIVED = frozenset({
    GPU_PRESENT_LABEL, WORKLOAD_CONFIG_LABEL, MIG_CONFIG_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, DRA_KUBELET_PLUGIN_LABEL,
    DRIVER_OWNER_LABEL,
})


@dataclass(frozen=True)
class Taint:
    """One node taint; `toleration` is what a pod needs to run on the tainted node."""

    key: str
    value: str | None
    effect: TaintEffect

    @property
    def text(self) -> str:
        """The AKS form, `key=value:Effect` or `key:Effect`."""
        return f"{self.key}={self.value}:{self.effect}" if self.value is not None else f"{self.key}:{self.effect}"

    @property
    def toleration(self) -> dict[str, str]:
        if self.value is None:
            return {"key": self.key, "operator": "Exists", "effect": self.effect}
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


def check_label_key(key: str) -> str:
    """Return a valid qualified name (`[prefix/]name`) unchanged; raise ValueError otherwise."""
    problem = qualified_name_problem(key)
    if problem is not None:
        raise ValueError(problem)
    return key


def check_label_value(value: str) -> str:
    problem = label_value_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def is_derived_label(key: str) -> bool:
    """Whether a pool derives this label itself (from its GPU, workload, MIG layout and sharing config)."""
    return key in _DERIVED or key.startswith(DEPLOY_LABEL_PREFIX)


def parse_taint(text: str) -> Taint:
    """Parse `key=value:Effect` (or `key:Effect`); raise ValueError naming what is wrong."""
    body, colon, effect = text.rpartition(":")
    if not colon or effect not in _EFFECTS:
        raise ValueError(f"taint {text!r} must end in ':NoSchedule', ':PreferNoSchedule' or ':NoExecute'")
    key, equals, value = body.partition("=")
    check_label_key(key)
    if equals:
        check_label_value(value)
    return Taint(key=key, value=value if equals else None, effect=cast(TaintEffect, effect))
