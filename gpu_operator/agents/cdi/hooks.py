"""The OCI hooks of a CDI spec, as NVIDIA's toolkit writes them (internal/discover/hooks.go, cdiHookCreator).

Every hook runs the toolkit's `nvidia-cdi-hook` (or `nvidia-ctk hook`) at `hook_path` with the hook's name and
its arguments: `create-symlinks --link <target>::<link>`, `update-ldcache --folder <dir>`,
`enable-cuda-compat --host-driver-version=<v>`, `disable-device-node-modification`,
`update-application-profile` (all `createContainer` hooks) and `apply-cuda-memory-limits --driver-root <root>
--gpu-id <uuid>` (`createRuntime`). As in NVIDIA's creator, a symlink or memory-limits hook without arguments is
left out, and `chmod` is disabled by default, so it is not made at all.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

__all__ = [
    "CREATE_SYMLINKS",
    "UPDATE_LDCACHE",
    "ENABLE_CUDA_COMPAT",
    "DISABLE_DEVICE_NODE_MODIFICATION",
    "UPDATE_APPLICATION_PROFILE",
    "APPLY_CUDA_MEMORY_LIMITS",
    "Hook",
    "make_hook",
]

CREATE_SYMLINKS = "create-symlinks"
UPDATE_LDCACHE = "update-ldcache"
ENABLE_CUDA_COMPAT = "enable-cuda-compat"
DISABLE_DEVICE_NODE_MODIFICATION = "disable-device-node-modification"
UPDATE_APPLICATION_PROFILE = "update-application-profile"
APPLY_CUDA_MEMORY_LIMITS = "apply-cuda-memory-limits"
_NEED_ARGUMENTS = (CREATE_SYMLINKS, APPLY_CUDA_MEMORY_LIMITS)

Hook = dict[str, Any]


def _arguments(name: str, args: Sequence[str]) -> list[str]:
    if name == CREATE_SYMLINKS:
        return [a for arg in args for a in ("--link", arg)]
    if name == UPDATE_LDCACHE:
        return [a for arg in args for a in ("--folder", arg)]
    if name == APPLY_CUDA_MEMORY_LIMITS:
        return ["--driver-root", args[0], *(a for arg in args[1:] for a in ("--gpu-id", arg))]
    return list(args)


def make_hook(hook_path: str, name: str, args: Sequence[str] = ()) -> Hook | None:
    """One CDI hook (`hookName`, `path`, `args`, `env`), or None where NVIDIA's creator makes none."""
    if name in _NEED_ARGUMENTS and not args:
        return None
    program = posixpath.basename(hook_path)
    fixed = [program, "hook"] if program == "nvidia-ctk" else [program]
    lifecycle = "createRuntime" if name == APPLY_CUDA_MEMORY_LIMITS else "createContainer"
    return {"hookName": lifecycle, "path": hook_path, "args": [*fixed, name, *_arguments(name, args)],
            "env": ["NVIDIA_CTK_DEBUG=false"]}
