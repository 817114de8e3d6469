"""The words the remediation writes on a Node, and the states a node goes through.

The Node is the remediation's only datastore: a restarted leader reads back everything it needs from the keys
below (issue 26's design page fixes their names; the health monitor and `gpu-operator diag` read them too).

| key | kind | written by | value |
|---|---|---|---|
| `nvidia.com/gpu-remediation.state` | label | controller | a :class:`State` (absent: healthy) |
| `nvidia.com/gpu-remediation.fault` | annotation | controller | JSON: the fault being remediated |
| `nvidia.com/gpu-remediation.stage` | annotation | controller | JSON: the rung under way, its clock and request |
| `nvidia.com/gpu-remediation.history` | annotation | controller | JSON list: repairs (and recoveries) in the window |
| `nvidia.com/gpu-remediation.cordoned` | annotation | controller | `"true"` when the controller cordoned the node |
| `nvidia.com/gpu-remediation.reset-request` | annotation | controller | `<request-id>:<uuid>[,<uuid>...]` |
| `nvidia.com/gpu-remediation.reset-result` | annotation | node agent | `<id>:success`, `<id>:failed:<why>` |
| `nvidia.com/gpu-remediation.reboot-request` | annotation | controller | `<request-id>` (no cloud reboots it) |

A state is one label value; the rung behind it is the stage's `action`, one of the catalog's
:data:`~gpu_operator.faults.ACTIONS`. A ladder is written in the order of `ACTIONS`, so a rung's place in
`ACTIONS` is its place in every ladder, and "forward" means a larger index (then a later phase of the same rung).

Operands are paused for a GPU reset through their `nvidia.com/gpu.deploy.*` labels, as NVIDIA's MIG manager
pauses them for a MIG change (mig-parted pkg/mig/reconfigure/reconfigure.go `maybeSetPaused`, `maybeSetTrue`: the
device plugin, GPU feature discovery, DCGM, the DCGM exporter, NVSM and third-party GPU clients, the clients only
where the node has their label): only the labels that are `true` are paused (a DaemonSet selects `true`, so no
other value runs a pod), to `paused-for-gpu-reset`, and only that value is put back to `true`. The pause is read
back from the labels alone, so a restarted leader restores what an earlier one paused, and a MIG manager's or
driver manager's own pause values are never touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

from gpu_operator.faults import ACTIONS

__all__ = [
    "CORDONED_ANNOTATION",
    "FAULT_ANNOTATION",
    "HISTORY_ANNOTATION",
    "OPERAND_APPS",
    "PAUSED_FOR_RESET",
    "PREFIX",
    "QUARANTINED",
    "REBOOT_REQUEST_ANNOTATION",
    "REMEDIATING",
    "REPAIR_ACTIONS",
    "RESET_REQUEST_ANNOTATION",
    "RESET_RESULT_ANNOTATION",
    "STAGE_ANNOTATION",
    "STATE_LABEL",
    "UPGRADE_HOLDS",
    "UPGRADE_STATE_LABEL",
    "WHOLE_NODE_ACTIONS",
    "State",
    "blocks_upgrade",
    "rank",
    "request_id",
]

PREFIX = "nvidia.com/gpu-remediation."
STATE_LABEL = f"{PREFIX}state"
FAULT_ANNOTATION = f"{PREFIX}fault"
STAGE_ANNOTATION = f"{PREFIX}stage"
HISTORY_ANNOTATION = f"{PREFIX}history"
CORDONED_ANNOTATION = f"{PREFIX}cordoned"
RESET_REQUEST_ANNOTATION = f"{PREFIX}reset-request"
RESET_RESULT_ANNOTATION = f"{PREFIX}reset-result"
REBOOT_REQUEST_ANNOTATION = f"{PREFIX}reboot-request"

#: NVIDIA's driver-upgrade state label (k8s-operator-libs consts.go, driver name `gpu`).
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
#: The upgrade states in which the upgrade holds a node (between admission and the end, and failed: a failed node
#: stays cordoned by the upgrade and holds its slot): the remediation takes no action on such a node.
UPGRADE_HOLDS: frozenset[str] = frozenset({
    "cordon-required", "wait-for-jobs-required", "pod-deletion-required", "drain-required", "pod-restart-required",
    "validation-required", "uncordon-required", "upgrade-failed",
})


class State(str, Enum):
    """The values of the state label (absent: no fault being handled)."""

    ABSENT = ""
    OBSERVING = "observing"
    DEFERRED = "deferred"
    QUARANTINED = "quarantined"
    DRAINING = "draining"
    RESETTING = "resetting"
    REBOOTING = "rebooting"
    REIMAGING = "reimaging"
    REPAIRING = "repairing"
    VALIDATING = "validating"
    NEEDS_HUMAN = "needs-human"


#: The states of a node out of scheduling because of a fault: what the breakers count.
QUARANTINED: frozenset[State] = frozenset({
    State.QUARANTINED, State.DRAINING, State.RESETTING, State.REBOOTING, State.REIMAGING, State.REPAIRING,
    State.VALIDATING, State.NEEDS_HUMAN,
})
#: The states past quarantine, before the end: what `maxConcurrent` counts.
REMEDIATING: frozenset[State] = frozenset({
    State.DRAINING, State.RESETTING, State.REBOOTING, State.REIMAGING, State.REPAIRING, State.VALIDATING,
})
#: The rungs that repair something: counted against `attempts`, each ending in success or failure.
REPAIR_ACTIONS: frozenset[str] = frozenset({"reset-gpu", "reboot", "reimage"})
#: The repairs that take the whole node down (every pod goes, not only those of the faulty GPU).
WHOLE_NODE_ACTIONS: frozenset[str] = frozenset({"reboot", "reimage"})

#: Operand deploy label -> the `app` label of its pods (None: the label selects DaemonSets of other vendors).
OPERAND_APPS: Mapping[str, str | None] = MappingProxyType({
    "nvidia.com/gpu.deploy.device-plugin": "nvidia-device-plugin-daemonset",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia.com/gpu.deploy.dcgm-exporter": "nvidia-dcgm-exporter",
    "nvidia.com/gpu.deploy.dcgm": "nvidia-dcgm",
    "nvidia.com/gpu.deploy.nvsm": None,
    "nvidia.com/gpu.deploy.client": None,
})
PAUSED_FOR_RESET = "paused-for-gpu-reset"


def rank(action: str) -> int:
    """A rung's place on every ladder (its index in :data:`~gpu_operator.faults.ACTIONS`)."""
    return ACTIONS.index(action)


def request_id(node: str, since: float, action: str, attempt: int) -> str:
    """The id of a node-local or cloud request: the same for the same fault, rung and attempt, so a leader that
    plans the step again (after a restart) asks under the same id and the node agent never acts twice on it."""
    return hashlib.sha256(f"{node}/{since:.3f}/{action}/{attempt}".encode()).hexdigest()[:12]


def blocks_upgrade(labels: Mapping[str, str]) -> bool:
    """For the driver upgrade: a node the remediation holds (any state but absent and `observing`) is not
    admitted to an upgrade."""
    return labels.get(STATE_LABEL, "") not in (State.ABSENT.value, State.OBSERVING.value)
