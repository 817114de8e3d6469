"""One observation of the node: its Kubernetes object, the pods on it and the host's driver state, at one moment.

The decisions (:mod:`.plan`) read nothing else, so they are a pure function of a snapshot and of what the
program has done so far; the I/O layer (:mod:`.observe`) takes a new snapshot before every decision, which is
why an action is never issued when what it would do already holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_operator.agents.driver_manager.pods import PodFacts

__all__ = ["HostFacts", "NodeFacts", "Snapshot"]


@dataclass(frozen=True)
class NodeFacts:
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False


@dataclass(frozen=True)
class HostFacts:
    """The node's driver state, read from the host's /proc, /sys and /run (see :mod:`.host`)."""

    host_driver: str = ""
    """The version `nvidia-smi` in the host's root reports: a driver the host installed itself ("" when none)."""
    modules: frozenset[str] = frozenset()
    """Loaded kernel modules (/proc/modules)."""
    loaded_digest: str = ""
    """The DRIVER_CONFIG_DIGEST the driver container recorded when it loaded the driver ("" when none)."""
    driver_mounts: tuple[str, ...] = ()
    """Mount points at or under /run/nvidia/driver, deepest first."""
    pid_file: bool = False
    """A driver container's PID file is left in /run/nvidia."""
    vfio_bound: tuple[str, ...] = ()
    """PCI addresses of NVIDIA devices bound to vfio-pci."""
    mellanox: bool = False
    """The node has a Mellanox (vendor 0x15b3) PCI device."""
    mofed_ready: bool = False
    """MOFED is loaded: mlx5_core with a host MOFED, else the MOFED driver pod's `.driver-ready` file."""

    @property
    def driver_loaded(self) -> bool:
        return "nvidia" in self.modules


@dataclass(frozen=True)
class Snapshot:
    node: NodeFacts
    pods: tuple[PodFacts, ...]
    host: HostFacts
    now: float
    """Monotonic seconds: waits and timeouts are measured against it."""
