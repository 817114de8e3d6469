"""The labels NVIDIA's node labeller keeps on GPU nodes, as one pure function from a node's labels to changes.

NVIDIA's operator (its NodeLabelingReconciler, controllers/nodelabeling_controller.go, over the helpers of
controllers/state_manager.go) keeps these labels on every node; every operand DaemonSet selects
`nvidia.com/gpu.deploy.<operand>=true`, so a node nobody labels runs nothing:

* `nvidia.com/gpu.present`: `true` while NFD reports an NVIDIA PCI device (`feature.node.kubernetes.io/
  pci-10de.present`, `pci-0302_10de.present` or `pci-0300_10de.present` is `true`); `false`, not removed, once
  none does. Without it `true`, every deploy label we own goes.
* the whole deploy-label set of the node's workload config, whichever operands the config enables (a label no
  DaemonSet selects is harmless, and the set is NVIDIA's `gpuStateLabels`): `container` (driver, GFD, toolkit,
  device plugin, DCGM and its exporter, node status exporter, validator), `vm-passthrough` (the KubeVirt sandbox
  device plugin, or the Kata one with `sandboxWorkloads.mode: kata`, sandbox validator, VFIO manager, Kata
  manager, CC manager) or `vm-vgpu` (sandbox device plugin, vGPU manager, vGPU device manager, sandbox
  validator, CC manager), and `client` in each. The workload is the node's `nvidia.com/gpu.workload.config` when
  sandbox workloads are on and the value is valid, else `sandboxWorkloads.defaultWorkload`; with sandbox
  workloads off, every node is `container`. Ours beside NVIDIA's: `health-monitor` (the GPU health monitor) in
  the `container` set, the workload whose GPUs NVML sees.
* `mig-manager` on MIG-capable `container` nodes that lack the key (NVIDIA checks presence, so an empty value is
  kept); on a `container` node it is never removed, on the other workloads it always is.
* A deploy label that already holds a non-empty value keeps it (pause values such as `paused-for-mig-change`,
  `paused-for-driver-upgrade`, `<old>_paused-for-driver-upgrade`, `pre-installed`, or `false` set on purpose);
  an empty value counts as absent. Deploy labels we own (:data:`OWNED_DEPLOY_LABELS`: every key of every
  workload set, `mig-manager`, and the DRA stack's keys) outside the set are removed; any other
  `nvidia.com/gpu.deploy.*` label belongs to someone else and is left alone.
* `nvidia.com/gpu.deploy.operands=false` (set by a user) removes every deploy label we own from the node.
* `nvidia.com/gpu.deploy.dra-driver` (the DRA kubelet plugin's) is removed only once no pod on the node holds a
  ResourceClaim of NVIDIA's GPU DRA driver (the caller says so): the plugin must outlive the claims it has to
  unprepare, or their pods wedge in Terminating (nodelabeling_controller.go updateGPUStateLabels). A node whose
  GPUs are gone loses it at once, as there.
* `nvidia.com/mig.config`: seeded with `migManager.config.default` on every MIG-capable GPU node whose value is
  missing or empty, when the MIG manager runs, whatever the node's workload or `operands` switch (NVIDIA seeds
  only `all-disabled`, the chart's default, and ignores any other default). MIG-capable: GFD's
  `nvidia.com/mig.capable=true`, else a product name with A100, A30 or H100; never on a vGPU host
  (`nvidia.com/vgpu.host-driver-version`).

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
    "DRA_DRIVER_LABEL",
    "GPU_PCI_LABELS",
    "GPU_PRESENT_LABEL",
    "LabellingPolicy",
    "MIG_CAPABLE_LABEL",
    "MIG_CONFIG_LABEL",
    "OPERANDS_SWITCH",
    "OWNED_DEPLOY_LABELS",
    "SANDBOX_DEVICE_PLUGINS",
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

#: Sandbox modes (`sandboxWorkloads.mode`) and the device plugin each runs on `vm-passthrough` nodes.
SANDBOX_DEVICE_PLUGINS: Mapping[str, str] = MappingProxyType({
    "kubevirt": "sandbox-device-plugin", "kata": "kata-sandbox-device-plugin",
})
#: Set on every GPU node whatever its workload (third-party GPU clients select it).
CLIENT = "client"
MIG_MANAGER = "mig-manager"
#: The operands (deploy-label suffixes) each workload config runs, as NVIDIA's `gpuStateLabels`; `vm-passthrough`
#: runs one of :data:`SANDBOX_DEVICE_PLUGINS` besides these.
WORKLOAD_OPERANDS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "container": (
        "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter",
        "node-status-exporter", "operator-validator", "health-monitor",
    ),
    "vm-passthrough": ("sandbox-validator", "vfio-manager", "kata-manager", "cc-manager"),
    "vm-vgpu": ("sandbox-device-plugin", "vgpu-manager", "vgpu-device-manager", "sandbox-validator", "cc-manager"),
})
#: The DRA stack's deploy labels (NVIDIA's `gpuClusterStateLabels`): swept from nodes the ClusterPolicy labels.
_DRA_OPERANDS = ("driver", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra")
#: The DRA kubelet plugin's deploy label: removed only once no pod holds a GPU claim on the node.
DRA_DRIVER_LABEL = f"{DEPLOY_LABEL_PREFIX}dra-driver"
#: Every deploy-label suffix this labeller owns; it never touches any other `nvidia.com/gpu.deploy.*` label.
OWNED_DEPLOY_LABELS: frozenset[str] = frozenset({
    *(operand for operands in WORKLOAD_OPERANDS.values() for operand in operands),
    *SANDBOX_DEVICE_PLUGINS.values(), MIG_MANAGER, CLIENT, *_DRA_OPERANDS,
})


@dataclass(frozen=True)
class LabellingPolicy:
    """What the config says about labelling: the sandbox and MIG settings of the ClusterPolicy."""

    sandbox_enabled: bool = False
    default_workload: str = "container"
    mig_manager_enabled: bool = False
    mig_default_config: str = ""
    sandbox_mode: str = "kubevirt"
    """`sandboxWorkloads.mode`: which sandbox device plugin `vm-passthrough` nodes run."""


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
    """The deploy-label suffixes the node's workload calls for (empty for a node that is not a GPU node);
    `mig-manager` on MIG-capable container nodes."""
    if not is_gpu_node(labels) or labels.get(OPERANDS_SWITCH) == "false":
        return ()
    workload = workload_of(labels, policy)
    wanted = list(WORKLOAD_OPERANDS[workload])
    if workload == "vm-passthrough":
        wanted.insert(0, SANDBOX_DEVICE_PLUGINS.get(policy.sandbox_mode, SANDBOX_DEVICE_PLUGINS["kubevirt"]))
    if workload == "container" and mig_capable(labels):
        wanted.append(MIG_MANAGER)
    return (*wanted, CLIENT)


def label_changes(labels: Mapping[str, str], policy: LabellingPolicy, *,
                  gpu_claims_held: bool = False) -> dict[str, str | None]:
    """The label writes (value) and removals (None) that bring the node to what the policy says; {} when none.
    `gpu_claims_held`: a pod on the node holds a GPU DRA claim, so the DRA plugin's label is not removed yet."""
    changes: dict[str, str | None] = {}
    gpu = is_gpu_node(labels)
    if gpu and labels.get(GPU_PRESENT_LABEL) != "true":
        changes[GPU_PRESENT_LABEL] = "true"
    elif not gpu and GPU_PRESENT_LABEL in labels and labels[GPU_PRESENT_LABEL] != "false":
        changes[GPU_PRESENT_LABEL] = "false"
    operands = desired_operands(labels, policy)
    wanted = {f"{DEPLOY_LABEL_PREFIX}{operand}" for operand in operands}
    mig_manager = f"{DEPLOY_LABEL_PREFIX}{MIG_MANAGER}"
    # NVIDIA leaves mig-manager on a container node once set (a GPU may read as not MIG-capable for a while)
    if operands and workload_of(labels, policy) == "container" and mig_manager in labels:
        wanted.add(mig_manager)
    for key in labels:
        if key.startswith(DEPLOY_LABEL_PREFIX) and key.removeprefix(DEPLOY_LABEL_PREFIX) in OWNED_DEPLOY_LABELS \
                and key not in wanted:
            changes[key] = None
    for key in sorted(wanted):
        if key == mig_manager and key in labels:
            continue  # NVIDIA checks mig-manager by presence: an empty value is kept
        if not labels.get(key):
            changes[key] = "true"
    if gpu and gpu_claims_held and changes.get(DRA_DRIVER_LABEL, "") is None:
        del changes[DRA_DRIVER_LABEL]
    seed = policy.mig_default_config
    if gpu and policy.mig_manager_enabled and seed and mig_capable(labels) and not labels.get(MIG_CONFIG_LABEL):
        changes[MIG_CONFIG_LABEL] = seed
    return changes


def apply_changes(labels: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """The labels after `changes` (what a merge patch with them does)."""
    result = {key: value for key, value in labels.items() if changes.get(key, value) is not None}
    result.update({key: value for key, value in changes.items() if value is not None})
    return result
