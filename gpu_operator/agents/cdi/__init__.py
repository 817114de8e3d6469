"""CDI specs as NVIDIA's toolkit makes them: what a driver installation injects into a container.

:mod:`.driver` finds the driver's files under its root (version, library directories, libraries, programs,
firmware, sockets, configuration files), :mod:`.elf` reads a library's SONAME, :mod:`.drm` finds a GPU's DRM
nodes and their by-path links, :mod:`.hooks` writes the toolkit's OCI hooks, :mod:`.features` reads its feature
flags, and :mod:`.edits` assembles the container edits of the `gpu` class: the spec-wide edits and each full GPU's
or MIG device's. The device plugin builds its specs from these (see
:mod:`gpu_operator.agents.device_plugin.cdi_spec`). Nothing here imports Pulumi.
"""

from __future__ import annotations

from gpu_operator.agents.cdi.driver import DriverRoot
from gpu_operator.agents.cdi.edits import Layout, common_edits, gpu_edits, merge_edits, mig_edits
from gpu_operator.agents.cdi.features import feature_flags
from gpu_operator.agents.cdi.hooks import disabled_hooks

__all__ = ["DriverRoot", "Layout", "common_edits", "gpu_edits", "mig_edits", "merge_edits", "feature_flags",
           "disabled_hooks"]
