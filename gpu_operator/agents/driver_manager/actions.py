"""What the decisions ask for: one action on the API server or the host, a wait, or the end with an exit status.

Actions are plain data; :mod:`.execute` performs them. Each names one change, small enough that the next
observation shows whether it took effect, and carries a one-line `describe()` for the log.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Action",
    "Cordon",
    "Decision",
    "Evict",
    "Exit",
    "RemoveFile",
    "SetLabels",
    "UnbindVfio",
    "Uncordon",
    "UnloadModule",
    "Unmount",
    "Wait",
]


@dataclass(frozen=True)
class SetLabels:
    """Set node labels (a merge patch of these keys only)."""

    labels: tuple[tuple[str, str], ...]
    why: str

    def describe(self) -> str:
        return f"{self.why}: " + ", ".join(f"{key}={value}" for key, value in self.labels)


@dataclass(frozen=True)
class Cordon:
    """Mark the node unschedulable, and record that this program did so."""

    def describe(self) -> str:
        return "cordon the node"


@dataclass(frozen=True)
class Uncordon:
    """Make the node schedulable again and drop the record that this program cordoned it."""

    def describe(self) -> str:
        return "uncordon the node (this program cordoned it)"


@dataclass(frozen=True)
class Evict:
    """Ask the Eviction API to evict one pod (disruption budgets apply)."""

    namespace: str
    name: str
    why: str

    def describe(self) -> str:
        return f"evict {self.why} pod {self.namespace}/{self.name}"


@dataclass(frozen=True)
class UnloadModule:
    module: str

    def describe(self) -> str:
        return f"unload kernel module {self.module}"


@dataclass(frozen=True)
class Unmount:
    path: str

    def describe(self) -> str:
        return f"unmount {self.path}"


@dataclass(frozen=True)
class RemoveFile:
    path: str

    def describe(self) -> str:
        return f"remove {self.path}"


@dataclass(frozen=True)
class UnbindVfio:
    """Unbind NVIDIA devices from vfio-pci (all of them, as NVIDIA's `vfio-manage unbind --all`)."""

    addresses: tuple[str, ...]

    def describe(self) -> str:
        return f"unbind {', '.join(self.addresses)} from vfio-pci"


@dataclass(frozen=True)
class Wait:
    """Nothing to do until the node changes; look again after `seconds` at most."""

    reason: str
    seconds: float


@dataclass(frozen=True)
class Exit:
    code: int
    message: str


Action = SetLabels | Cordon | Uncordon | Evict | UnloadModule | Unmount | RemoveFile | UnbindVfio
Decision = Action | Wait | Exit
