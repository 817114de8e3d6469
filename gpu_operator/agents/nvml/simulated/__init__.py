"""Simulated GPU nodes: an NVML library and a PCI bus answering from a profile.

`--nvml fake:<profile>` runs any agent against one of these instead of the driver: the real adapter sits on
top of :class:`SimulatedLibrary`, so everything above NVML behaves as on a real node. Profiles are data
(:mod:`gpu_operator.agents.nvml.simulated.profile`); the shipped ones are listed by :func:`profile_names`.
Faults can be injected while agents run, through the file `GPU_OPERATOR_NVML_FAULTS` names
(:mod:`gpu_operator.agents.nvml.simulated.injection`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated.injection import FAULTS_ENV, InjectionError, parse_injection
from gpu_operator.agents.nvml.simulated.library import SimulatedLibrary, mig_uuid
from gpu_operator.agents.nvml.simulated.pci import SimulatedPciBus, config_space
from gpu_operator.agents.nvml.simulated.profile import (
    NodeProfile,
    ProfileError,
    load_profile,
    profile_names,
)

__all__ = [
    "FAULTS_ENV",
    "InjectionError",
    "SimulatedLibrary",
    "SimulatedPciBus",
    "NodeProfile",
    "ProfileError",
    "config_space",
    "load_profile",
    "mig_uuid",
    "open_simulated",
    "parse_injection",
    "profile_names",
]


def open_simulated(
    profile: NodeProfile,
    *,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.time,
    faults_file: str | os.PathLike[str] | None = None,
) -> LibraryNvml:
    """An opened `Nvml` for a simulated node (with the fault file `faults_file`, when given). Raises the profile's
    init fault, or "driver not loaded" when the fault file says so."""
    library = SimulatedLibrary(profile, sleep=sleep, faults_file=faults_file)
    return LibraryNvml.open(library, SimulatedPciBus(profile), clock=clock, source=f"fake:{profile.name}")
