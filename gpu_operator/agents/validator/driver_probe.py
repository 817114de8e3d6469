"""Does the driver work? Asked through NVML, the way `nvidia-smi` would find out.

NVIDIA's validator runs `nvidia-smi` from the driver root and looks at its exit status; `nvidia-smi` loads
`libnvidia-ml.so.1`, initialises NVML and queries every GPU. We ask the same through the shared NVML layer
(`--nvml`): load the library from that driver root, initialise, read the driver version and every GPU. The
driver passes when NVML starts and reports at least one GPU and no GPU has fallen off the bus (cases where
`nvidia-smi` exits non-zero). With `DRIVER_VALIDATION_SKIP_GPU_INIT` (`nvidia-smi --version`, for GPUs bound to
vfio-pci) only the library is loaded; the GPUs are not initialised.

pynvml holds one library per process, and caches the C function pointers it looks up in it; a failed try releases
both (:func:`~gpu_operator.agents.nvml.loader.release_pynvml`), so that the next try (the containerized driver
after the host's, or the same root once the driver container has installed it) loads and calls the library
afresh instead of the one that failed.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.agents.nvml import NvmlError, open_nvml
from gpu_operator.agents.nvml.loader import LIBRARY_NAME, candidate_libraries, release_pynvml
from gpu_operator.agents.nvml.selection import parse_nvml_choice
from gpu_operator.agents.validator.errors import ValidationFailed

__all__ = ["DriverProbe", "probe_driver"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DriverProbe:
    """What NVML said: the driver version and the GPUs' minor numbers (None when GPUs were not initialised)."""

    driver_version: str | None
    gpu_minors: tuple[int, ...] | None


def _library_loads(root: str) -> None:
    found = next(iter(candidate_libraries([root])), None)
    if found is None:
        raise ValidationFailed(f"{LIBRARY_NAME} not found under {root}")
    try:
        ctypes.CDLL(found)
    except OSError as error:
        raise ValidationFailed(f"cannot load {found}: {error}") from error


def probe_driver(
    spec: str, root: str | None, *, initialise_gpus: bool = True, environ: Mapping[str, str] | None = None
) -> DriverProbe:
    """Check the driver under `root` (the dynamic loader's when None) with the NVML `spec` (`auto`, `fake:...`)."""
    try:
        simulated = parse_nvml_choice(spec).simulated
    except ValueError as error:
        raise ValidationFailed(str(error)) from error
    if not simulated and root is not None:
        _library_loads(root)
        if not initialise_gpus:
            return DriverProbe(None, None)
    try:
        nvml = open_nvml(spec, environ=environ, driver_root_paths=(root,) if root else ())
    except (NvmlError, ValueError) as error:
        if not simulated:
            release_pynvml()
        raise ValidationFailed(f"NVML cannot start: {error}") from error
    try:
        system, gpus = nvml.system(), nvml.devices()
    except NvmlError as error:
        raise ValidationFailed(f"NVML query failed: {error}") from error
    finally:
        nvml.close()
    if not gpus:
        raise ValidationFailed("NVML found no GPUs")
    lost = [gpu.index for gpu in gpus if gpu.lost]
    if lost:
        raise ValidationFailed(f"GPU {', '.join(map(str, lost))} fell off the bus or stopped answering")
    _log.info("NVIDIA driver %s answers for %d GPU(s)", system.driver_version, len(gpus))
    minors = tuple(gpu.minor_number if gpu.minor_number is not None else gpu.index for gpu in gpus)
    return DriverProbe(system.driver_version, minors)
