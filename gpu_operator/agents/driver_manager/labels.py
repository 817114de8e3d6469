"""The node keys the driver manager reads and writes, and how it pauses and restores an operand's deploy label.

Every operand DaemonSet selects nodes by its `nvidia.com/gpu.deploy.<operand>` label. To stop the operands while
the driver is replaced, the driver manager rewrites those labels to values no DaemonSet selects: `true` becomes
`paused-for-driver-upgrade`, any other value `v` becomes `v_paused-for-driver-upgrade` (so the MIG manager's own
`paused-for-mig-change` survives), and an empty or `false` value is left alone (nothing runs there anyway).
Restoring strips the marker again. Both are idempotent and the pause is reversible from the label alone, so a
restarted driver manager restores what an interrupted one paused, and restoring never needs remembered state:
`unpause(pause(v)) == unpause(v)`, which is `v` for every value that was not already paused.

The driver's own label is never paused (that would deschedule the pod doing the pausing). The DRA kubelet
plugin's label is paused separately and last, as NVIDIA does: it serves the claim release of the other GPU
clients, so it must outlive them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "CLIENT_LABEL",
    "CORDONED_ANNOTATION",
    "DEPLOY_PREFIX",
    "DRAIN_SKIP_LABEL",
    "DRA_DRIVER_LABEL",
    "DRIVER_LABEL",
    "OPERAND_LABELS",
    "PAUSED",
    "PRE_INSTALLED",
    "UPGRADE_ENABLED_ANNOTATION",
    "is_paused",
    "pause",
    "paused_values",
    "restored_values",
    "unpause",
]

DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
#: The containerized driver's own deploy label; `pre-installed` when the host has a driver of its own.
DRIVER_LABEL = f"{DEPLOY_PREFIX}driver"
PRE_INSTALLED = "pre-installed"
#: The marker NVIDIA's k8s-driver-manager writes into paused labels.
PAUSED = "paused-for-driver-upgrade"
#: GPU-client DaemonSets of other vendors select this label; their pods may run in any namespace.
CLIENT_LABEL = f"{DEPLOY_PREFIX}client"
DRA_DRIVER_LABEL = f"{DEPLOY_PREFIX}dra-driver"
#: The operand labels paused first, in NVIDIA's order (the driver's and the DRA kubelet plugin's excluded).
OPERAND_LABELS: tuple[str, ...] = tuple(
    DEPLOY_PREFIX + name
    for name in (
        "operator-validator",
        "container-toolkit",
        "device-plugin",
        "gpu-feature-discovery",
        "dcgm-exporter",
        "dcgm",
        "mig-manager",
        "nvsm",
        "sandbox-validator",
        "sandbox-device-plugin",
        "vgpu-device-manager",
        "client",
        "dra-validator",
        "dcgm-dra",
        "dcgm-exporter-dra",
    )
)
#: Set by the operator (NVIDIA's, or ours) when its upgrade controller owns eviction and drain on the node.
UPGRADE_ENABLED_ANNOTATION = "nvidia.com/gpu-driver-upgrade-enabled"
#: Pods carrying this label with value `true` are never drained (the operator's own pod carries it).
DRAIN_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade-drain.skip"
#: Ours, not NVIDIA's: set together with `spec.unschedulable` when this program cordons the node, so that it
#: (or its restarted successor) uncordons only a node it cordoned itself, never one an admin cordoned.
CORDONED_ANNOTATION = "nvidia.com/gpu-driver-manager.cordoned"


def is_paused(value: str) -> bool:
    return PAUSED in value


def pause(value: str) -> str:
    """The value that deschedules the operand; empty, `false` and already-paused values are kept."""
    if value in ("", "false") or is_paused(value):
        return value
    if value == "true":
        return PAUSED
    return f"{value}_{PAUSED}"


def unpause(value: str) -> str:
    """The value before :func:`pause`; a value without the marker is returned as it is."""
    if not is_paused(value):
        return value
    if value == PAUSED:
        return "true"
    if value.endswith(f"_{PAUSED}"):
        return value[: -len(PAUSED) - 1]
    # the marker elsewhere (not a value this program writes): drop it as NVIDIA does
    return value.replace(PAUSED, "").replace("__", "_").strip("_")


def paused_values(labels: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
    """The labels among `keys` present on the node whose value must change to pause them (absent ones stay absent)."""
    return {key: pause(labels[key]) for key in keys if key in labels and pause(labels[key]) != labels[key]}


def restored_values(labels: Mapping[str, str], keys: Iterable[str]) -> dict[str, str]:
    """The labels among `keys` that carry the pause marker, with their value before the pause."""
    return {key: unpause(labels[key]) for key in keys if key in labels and is_paused(labels[key])}
