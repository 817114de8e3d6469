"""The NVIDIA device plugin's config file (api/config/v1) as the node agents read it.

The device plugin and GPU feature discovery share one file (a key of the plugin's ConfigMap, picked per node
by the `nvidia.com/device-plugin.config` label). It carries flags (each agent's own flags may be set there) and
the GPU sharing setup: resources replicated by time-slicing or by MPS.

Sharing rules, as the plugin applies them today:

* the *active* strategy is MPS if the `mps` block replicates some resource (replicas > 1), else time-slicing if
  the `timeSlicing` block does, else none;
* the replication that applies to a resource is looked up in the `mps` block whenever that block is present,
  otherwise in `timeSlicing`;
* a replicated resource is renamed `<name>.shared` only with `renameByDefault: true` (per-resource `rename` and
  `devices` are parsed and validated but currently ignored: every GPU is replicated under its own name);
* `failRequestsGreaterThanOne` unset means false for time-slicing but true for MPS; an explicit
  `failRequestsGreaterThanOne: false` under `mps` is honoured.

The `imex` section names the IMEX channels every container gets (only channel 0 exists today) and whether a
missing channel device node is an error; the plugin's `--imex-channel-ids` / `--imex-required` override it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gpu_operator.facts.resource_names import RESOURCE_DOMAIN

__all__ = [
    "SharingStrategy",
    "ReplicatedDevices",
    "ReplicatedResource",
    "ReplicatedResources",
    "Sharing",
    "Imex",
    "PluginConfig",
    "RESOURCE_PREFIX",
]

#: The resource namespace of NVIDIA's devices; a bare name such as `gpu` means `nvidia.com/gpu`.
RESOURCE_PREFIX = f"{RESOURCE_DOMAIN}/"


class SharingStrategy(str, Enum):
    """How GPUs are shared; the value is what `nvidia.com/gpu.sharing-strategy` says."""

    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"


@dataclass(frozen=True, slots=True)
class ReplicatedDevices:
    """Which devices a replication applies to: all, the first `count`, or a list of indices/UUIDs."""

    all: bool = True
    count: int | None = None
    references: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ReplicatedResource:
    """One resource made available `replicas` times per device. `name` is fully qualified."""

    name: str
    replicas: int
    rename: str = ""
    devices: ReplicatedDevices = field(default_factory=ReplicatedDevices)

    @property
    def renamed(self) -> bool:
        return self.rename != ""


@dataclass(frozen=True, slots=True)
class ReplicatedResources:
    """A `timeSlicing` or `mps` block."""

    resources: tuple[ReplicatedResource, ...]
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False

    def replicates(self) -> bool:
        return any(r.replicas > 1 for r in self.resources)

    def find(self, resource: str) -> ReplicatedResource | None:
        return next((r for r in self.resources if r.name == resource), None)


@dataclass(frozen=True, slots=True)
class Sharing:
    """The `sharing` section."""

    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None

    @property
    def strategy(self) -> SharingStrategy:
        if self.mps is not None and self.mps.replicates():
            return SharingStrategy.MPS
        if self.time_slicing is not None and self.time_slicing.replicates():
            return SharingStrategy.TIME_SLICING
        return SharingStrategy.NONE

    @property
    def replicated(self) -> ReplicatedResources | None:
        """The block replications are looked up in: `mps` whenever it is present."""
        return self.mps if self.mps is not None else self.time_slicing

    def replication_of(self, resource: str) -> ReplicatedResource | None:
        block = self.replicated
        return None if block is None else block.find(resource)


@dataclass(frozen=True, slots=True)
class Imex:
    """The `imex` section: the IMEX channels given to every container, and whether they must exist."""

    channel_ids: tuple[int, ...] = ()
    required: bool = False


@dataclass(frozen=True, slots=True)
class PluginConfig:
    """A parsed config file. `flags` is the raw `flags` mapping (camelCase keys, nested `plugin` and `gfd`).

    `imex` is None when the file has no `imex` section (the flags and their defaults then decide).
    """

    version: str = "v1"
    flags: Mapping[str, Any] = field(default_factory=dict)
    sharing: Sharing = field(default_factory=Sharing)
    imex: Imex | None = None

    def flag(self, *path: str) -> Any:
        """A flag value by its path in the file (`flag("gfd", "oneshot")`), or None when not set."""
        node: Any = self.flags
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        return node
