"""The toolkit's CDI feature flags: switches of the spec generation, all off by default.

NVIDIA's device plugin passes its `--cdi-feature-flags` (`CDI_FEATURE_FLAGS`, a comma list) to the toolkit's nvcdi
library (k8s-device-plugin v0.20.0 internal/cdi/cdi.go `New`, nvcdi.WithFeatureFlags). The flags
nvidia-container-toolkit v1.20.0 knows (pkg/nvcdi/api.go `FeatureFlag`, read in driver-nvml.go, full-gpu-nvml.go,
lib.go, lib-csv.go and options.go) are :data:`FEATURE_FLAGS`, each with what it changes in the specs written here;
the misspelling `disable-nvsandbox-utils` of the first release is read as `disable-nvsandboxutils`, as nvcdi does.

`enable-coherent-annotations` (a `gpu.nvidia.com/coherent` annotation per GPU from NVML's addressing mode) is
known but refused here: this agent does not read the addressing mode, and a flag set for an annotation that never
appears would go unnoticed. An unknown flag is refused too (nvcdi ignores it silently): it is a misspelling or a
flag of another toolkit version, and either way it would change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "EXPLICIT_DRIVER_LIBRARIES",
    "DISABLE_IPC",
    "NO_ADDITIONAL_GIDS",
    "FEATURE_FLAGS",
    "UNSUPPORTED",
    "feature_flags",
]

EXPLICIT_DRIVER_LIBRARIES = "enable-explicit-driver-libraries"
DISABLE_IPC = "disable-ipc-discoverer"
NO_ADDITIONAL_GIDS = "no-additional-gids-for-device-nodes"
#: Flag -> what it does to the specs this agent writes.
FEATURE_FLAGS: dict[str, str] = {
    EXPLICIT_DRIVER_LIBRARIES: "also mount libEGL, libGL, libGLESv1_CM, libGLESv2, libGLX, libGLdispatch, libOpenCL, "
                               "libOpenGL, libnvidia-api, libnvidia-egl-xcb and libnvidia-egl-xlib (`.so`) found in "
                               "the driver's library directories",
    DISABLE_IPC: "mount no IPC sockets (nvidia-persistenced, nvidia-fabricmanager, MPS)",
    NO_ADDITIONAL_GIDS: "add no additionalGids for device nodes that are not read-writable by all",
    "disable-nvsandboxutils": "nothing here: devices are read through NVML and sysfs, never nvsandboxutils",
    "disable-multiple-csv-devices": "nothing here: it concerns the CSV (Tegra) mode only",
}
#: Flags nvcdi knows that this agent refuses, with the reason.
UNSUPPORTED = {
    "enable-coherent-annotations": "this agent does not read NVML's addressing mode, so it cannot write the "
                                   "gpu.nvidia.com/coherent annotation",
}
_ALIASES = {"disable-nvsandbox-utils": "disable-nvsandboxutils"}


def feature_flags(names: Iterable[str]) -> frozenset[str]:
    """The flags to apply, checked. Raises ValueError naming every refused flag, why, and the known ones."""
    chosen = frozenset(_ALIASES.get(n.strip(), n.strip()) for n in names if n.strip())
    problems = [f"{flag!r}: {UNSUPPORTED[flag]}" for flag in sorted(chosen) if flag in UNSUPPORTED]
    problems += [f"{flag!r} is not a CDI feature flag" for flag in sorted(chosen)
                 if flag not in FEATURE_FLAGS and flag not in UNSUPPORTED]
    if problems:
        raise ValueError(f"{'; '.join(problems)} (the flags are {', '.join(FEATURE_FLAGS)})")
    return chosen
