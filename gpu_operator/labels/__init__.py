"""Node labelling: which NVIDIA labels a GPU node should carry, as a pure function of its labels and the policy."""

from gpu_operator.labels.node_labelling import (
    CLIENT,
    DEPLOY_LABEL_PREFIX,
    GPU_PRESENT_LABEL,
    GPU_PCI_LABELS,
    LabellingPolicy,
    MIG_CAPABLE_LABEL,
    MIG_CONFIG_LABEL,
    OPERANDS_SWITCH,
    WORKLOAD_CONFIG_LABEL,
    WORKLOAD_OPERANDS,
    apply_changes,
    desired_operands,
    is_gpu_node,
    label_changes,
    mig_capable,
    workload_of,
)

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
