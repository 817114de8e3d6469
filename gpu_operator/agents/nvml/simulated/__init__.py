"""Simulated GPU nodes: an NVML library and a PCI bus answering from a profile.

`--nvml fake:<profile>` runs any agent against one of these instead of the driver: the real adapter sits on
top of :class:`SimulatedLibrary`, so everything above NVML behaves as on a real node. Profiles are data
(:mod:`gpu_operator.agents.nvml.simulated.profile`); the shipped ones are listed by :func:`profile_names`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated.library import SimulatedLibrary, mig_uuid
from gpu_operator.agents.nvml.simulated.pci import SimulatedPciBus, config_space
from gpu_operator.agents.nvml.simulated.profile import (
    NodeProfile,
    ProfileError,
    load_profile,
    profile_names,
)

__all__ = [
    "SimulatedLibrary",
    "SimulatedPciBus",
    "NodeProfile",
    "ProfileError",
    "config_space",
    "load_profile",
    "mig_uuid",
    "open_simulated",
    "profile_names",
]


def open_simulated(
    profile: NodeProfile,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> LibraryNvml:
    """An opened `Nvml` for a simulated node. Raises the profile's init fault, if it has one."""
    library = SimulatedLibrary(profile, sleep=sleep)
    return LibraryNvml.open(library, SimulatedPciBus(profile), clock=clock, source=f"fake:{profile.name}")
