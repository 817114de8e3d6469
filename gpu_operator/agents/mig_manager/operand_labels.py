"""The GPU operands' deploy labels across a MIG change: paused while it runs, put back however it ends.

Every operand DaemonSet selects `nvidia.com/gpu.deploy.<operand>=true`, so writing `paused-for-mig-change`
takes its pod off the node. As NVIDIA's mig-manager (mig-parted pkg/mig/reconfigure/reconfigure.go
`getCurrentNodeLabels`, `maybeSetPaused`, `maybeSetTrue`, `setState`): the labels are read once, before anything
is written; a pause sets every one to `paused-for-mig-change` except those that are `false`, and
`gpu.deploy.client` only when the node has it; and at every end after that read (success, the layout already
applied, any failure) each label gets its value back, whether this run paused it or not: an absent or empty
label and one still paused by an earlier run (a reboot, a crash) become `true`, `false` stays `false`.

One difference, on purpose: NVIDIA writes `true` for every other value too, so an operand that a value such as
`paused-for-driver-upgrade` or `pre-installed` kept off the node would be deployed by a MIG change; here such a
value is put back as it was. Only labels whose value differs from what the node holds are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CLIENT_LABEL", "DEPLOY_LABELS", "PAUSED", "OperandLabels"]

PAUSED = "paused-for-mig-change"
#: The node-selector key of third-party GPU clients' DaemonSets; paused only when the node has it.
CLIENT_LABEL = "nvidia.com/gpu.deploy.client"
#: Operand deploy label -> the `app` label of the pods it controls (the client label selects DaemonSets itself).
DEPLOY_LABELS: dict[str, str | None] = {
    "nvidia.com/gpu.deploy.device-plugin": "nvidia-device-plugin-daemonset",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia.com/gpu.deploy.dcgm-exporter": "nvidia-dcgm-exporter",
    "nvidia.com/gpu.deploy.dcgm": "nvidia-dcgm",
    "nvidia.com/gpu.deploy.nvsm": None,
    CLIENT_LABEL: None,
}
_NOT_DEPLOYED = "false"
_DEPLOYED = "true"


def _restored(before: str) -> str:
    return _DEPLOYED if before in ("", PAUSED) else before


@dataclass(slots=True)
class OperandLabels:
    """The operand labels as read before the change (`before`, "" for absent) and as this run left them (`now`)."""

    before: Mapping[str, str]
    now: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, node_labels: Mapping[str, str]) -> OperandLabels:
        before = {label: node_labels.get(label) or "" for label in DEPLOY_LABELS}
        if not before[CLIENT_LABEL]:
            del before[CLIENT_LABEL]
        return cls(before, dict(before))

    def _changes(self, wanted: Mapping[str, str]) -> dict[str, str]:
        changes = {label: value for label, value in wanted.items() if self.now[label] != value}
        self.now.update(changes)
        return changes

    def pause(self) -> dict[str, str]:
        """The labels to write to pause the operands (the ones that are not `false`)."""
        return self._changes({label: PAUSED for label, value in self.before.items() if value != _NOT_DEPLOYED})

    def restore(self) -> dict[str, str]:
        """The labels to write to give every operand label its value back."""
        return self._changes({label: _restored(value) for label, value in self.before.items()})

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(label for label, value in self.now.items() if value == PAUSED)
