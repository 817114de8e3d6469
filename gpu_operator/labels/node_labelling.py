"""The labels NVIDIA's node labeller keeps on GPU nodes, as one pure function from a node's labels to changes.

NVIDIA's operator (its NodeLabelingReconciler) keeps these labels on every node; every operand DaemonSet selects
`nvidia.com/gpu.deploy.<operand>=true`, so a node nobody labels runs nothing:

* `nvidia.com/gpu.present`: `true` while NFD reports an NVIDIA PCI device (`feature.node.kubernetes.io/
  pci-10de.present`, `pci-0302_10de.present` or `pci-0300_10de.present` is `true`); `false`, not removed, once
  none does. Without it `true`, every deploy label goes.
* the deploy labels of the node's workload config: `container` (driver, GFD, toolkit, device plugin, DCGM and its
  exporter, node status exporter, validator, and the MIG manager on MIG-capable GPUs), `vm-passthrough` or
  `vm-vgpu` (the sandbox operands), and `client` on every GPU node; limited to the operands the config enables.
  The workload is the node's `nvidia.com/gpu.workload.config` when sandbox workloads are on and the value is
  valid, else `sandboxWorkloads.defaultWorkload`; with sandbox workloads off, every node is `container`.
* A deploy label that already holds a non-empty value keeps it (pause values such as `paused-for-mig-change`,
  `paused-for-driver-upgrade`, `<old>_paused-for-driver-upgrade`, `pre-installed`, or `false` set on purpose);
  an empty value counts as absent. Deploy labels outside the set are removed.
* `nvidia.com/gpu.deploy.operands=false` (set by a user) removes every deploy label of the node.
* `nvidia.com/mig.config`: seeded with `migManager.config.default` on MIG-capable container nodes that lack it,
  when the MIG manager runs. MIG-capable: GFD's `nvidia.com/mig.capable=true`, else a product name with A100, A30
  or H100; never on a vGPU host (`nvidia.com/vgpu.host-driver-version`).

The controller applies :func:`label_changes` to live nodes; the AKS pool render applies the same function to the
labels a pool's nodes would show, so the labels a pool is created with and the labels the controller would write
can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "CLIENT",
    "DEPLOY_LABEL_PREFIX",
    "GPU_PCI_LABELS",
    "GPU_PRESENT_LABEL",
    "LabellingPolicy",
    "MIG_CAPABLE_LABEL",
    "MIG_CONFIG_LABEL",
    "OPERANDS_SWITCH",
    "WORKLOAD_CONFIG_LABEL",
    "WORKLOAD_OPERANDS",
    "apply_changes",
    "desired_operands",
    "is_gpu_node",
    "label_changes",
    "mig_capable",
    "workload_of",
]

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
#: The user's switch that turns every operand off on a node (a deploy label itself, never written here).
OPERANDS_SWITCH = f"{DEPLOY_LABEL_PREFIX}operands"
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
_PRODUCT_LABEL = "nvidia.com/gpu.product"
_VGPU_HOST_LABEL = "nvidia.com/vgpu.host-driver-version"
_MIG_PRODUCTS = ("a100", "a30", "h100")
#: NFD's labels for an NVIDIA PCI device (any vendor-10de device, or the 3D / VGA controller classes).
GPU_PCI_LABELS = (
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)

#: The operands (deploy-label suffixes) each workload config runs.
WORKLOAD_OPERANDS: Mapping[str, tuple[str, ...]] = MappingProxyType({
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
MIG_MANAGER = "mig-manager"


@dataclass(frozen=True)
class LabellingPolicy:
    """What the config says about labelling: the operands it renders and the sandbox and MIG settings."""

    enabled_operands: frozenset[str]
    """Deploy-label suffixes some rendered DaemonSet selects (an operand the config turns off gets no label)."""
    sandbox_enabled: bool = False
    default_workload: str = "container"
    mig_manager_enabled: bool = False
    mig_default_config: str = ""


def is_gpu_node(labels: Mapping[str, str]) -> bool:
    return any(labels.get(label) == "true" for label in GPU_PCI_LABELS)


def workload_of(labels: Mapping[str, str], policy: LabellingPolicy) -> str:
    if not policy.sandbox_enabled:
        return "container"
    asked = labels.get(WORKLOAD_CONFIG_LABEL, "")
    return asked if asked in WORKLOAD_OPERANDS else policy.default_workload


def mig_capable(labels: Mapping[str, str]) -> bool:
    if labels.get(_VGPU_HOST_LABEL):
        return False
    if MIG_CAPABLE_LABEL in labels:
        return labels[MIG_CAPABLE_LABEL] == "true"
    product = labels.get(_PRODUCT_LABEL, "").lower()
    return any(name in product for name in _MIG_PRODUCTS)


def desired_operands(labels: Mapping[str, str], policy: LabellingPolicy) -> tuple[str, ...]:
    """The deploy-label suffixes the node should carry (empty for a node that is not a GPU node)."""
    if not is_gpu_node(labels) or labels.get(OPERANDS_SWITCH) == "false":
        return ()
    workload = workload_of(labels, policy)
    wanted = list(WORKLOAD_OPERANDS[workload])
    if workload == "container" and mig_capable(labels):
        wanted.append(MIG_MANAGER)
    return (*[operand for operand in wanted if operand in policy.enabled_operands], CLIENT)


def label_changes(labels: Mapping[str, str], policy: LabellingPolicy) -> dict[str, str | None]:
    """The label writes (value) and removals (None) that bring the node to what the policy says; {} when none."""
    changes: dict[str, str | None] = {}
    gpu = is_gpu_node(labels)
    if gpu and labels.get(GPU_PRESENT_LABEL) != "true":
        changes[GPU_PRESENT_LABEL] = "true"
    elif not gpu and GPU_PRESENT_LABEL in labels and labels[GPU_PRESENT_LABEL] != "false":
        changes[GPU_PRESENT_LABEL] = "false"
    wanted = {f"{DEPLOY_LABEL_PREFIX}{operand}" for operand in desired_operands(labels, policy)}
    for key, value in labels.items():
        if key.startswith(DEPLOY_LABEL_PREFIX) and key != OPERANDS_SWITCH and key not in wanted:
            changes[key] = None
    for key in sorted(wanted):
        if not labels.get(key):
            changes[key] = "true"
    seed = policy.mig_default_config
    if (wanted and policy.mig_manager_enabled and seed and workload_of(labels, policy) == "container"
            and mig_capable(labels) and not labels.get(MIG_CONFIG_LABEL)):
        changes[MIG_CONFIG_LABEL] = seed
    return changes


def apply_changes(labels: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """The labels after `changes` (what a merge patch with them does)."""
    result = {key: value for key, value in labels.items() if changes.get(key, value) is not None}
    result.update({key: value for key, value in changes.items() if value is not None})
    return result
