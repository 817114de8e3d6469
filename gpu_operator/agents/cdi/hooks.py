"""The OCI hooks of a CDI spec, as NVIDIA's toolkit writes them (v1.20.0 internal/discover/hooks.go, cdiHookCreator).

Every hook runs the toolkit's `nvidia-cdi-hook` (or `nvidia-ctk hook`) at `hook_path` with the hook's name and
its arguments: `create-symlinks --link <target>::<link>`, `update-ldcache --folder <dir>`,
`enable-cuda-compat --host-driver-version=<v>`, `disable-device-node-modification` and
`update-application-profile`, all `createContainer` hooks. These are the hooks v1.20.0's `nvidia-cdi-hook` runs
(cmd/nvidia-cdi-hook/commands/commands.go); any other name only logs "Unsupported CDI hook" there.

As in NVIDIA's creator, a symlink hook without arguments is left out, and `chmod` is disabled by default, so it
is not made at all. The device plugin's `--cdi-disable-hooks` (`CDI_DISABLE_HOOKS`) names hooks to leave out
(nvcdi.WithDisabledHooks); `all` leaves out every hook.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "ALL_HOOKS",
    "CHMOD",
    "CREATE_SYMLINKS",
    "UPDATE_LDCACHE",
    "ENABLE_CUDA_COMPAT",
    "DISABLE_DEVICE_NODE_MODIFICATION",
    "UPDATE_APPLICATION_PROFILE",
    "HOOK_NAMES",
    "Hook",
    "disabled_hooks",
    "make_hook",
]

ALL_HOOKS = "all"
CHMOD = "chmod"
CREATE_SYMLINKS = "create-symlinks"
UPDATE_LDCACHE = "update-ldcache"
ENABLE_CUDA_COMPAT = "enable-cuda-compat"
DISABLE_DEVICE_NODE_MODIFICATION = "disable-device-node-modification"
UPDATE_APPLICATION_PROFILE = "update-application-profile"
#: Every name v1.20.0's HookName knows, `all` included: what `--cdi-disable-hooks` accepts.
HOOK_NAMES = (ALL_HOOKS, CREATE_SYMLINKS, UPDATE_LDCACHE, ENABLE_CUDA_COMPAT, DISABLE_DEVICE_NODE_MODIFICATION,
              UPDATE_APPLICATION_PROFILE, CHMOD)
_DISABLED_BY_DEFAULT = frozenset({CHMOD})
_NEED_ARGUMENTS = (CREATE_SYMLINKS, CHMOD)

Hook = dict[str, Any]


def disabled_hooks(names: Iterable[str]) -> frozenset[str]:
    """The hooks to leave out, checked against the names the toolkit knows.

    Raises ValueError naming the unknown names and the known ones.
    """
    chosen = frozenset(n.strip() for n in names if n.strip())
    unknown = sorted(chosen - set(HOOK_NAMES))
    if unknown:
        raise ValueError(f"unknown CDI hook {', '.join(map(repr, unknown))}: the hooks are {', '.join(HOOK_NAMES)}")
    return chosen


def _arguments(name: str, args: Sequence[str]) -> list[str]:
    if name == CREATE_SYMLINKS:
        return [a for arg in args for a in ("--link", arg)]
    if name == UPDATE_LDCACHE:
        return [a for arg in args for a in ("--folder", arg)]
    return list(args)


def _is_disabled(name: str, args: Sequence[str], disabled: frozenset[str]) -> bool:
    if ALL_HOOKS in disabled or name in disabled or name in _DISABLED_BY_DEFAULT:
        return True
    return name in _NEED_ARGUMENTS and not args


def make_hook(hook_path: str, name: str, args: Sequence[str] = (),
              disabled: frozenset[str] = frozenset()) -> Hook | None:
    """One CDI hook (`hookName`, `path`, `args`, `env`), or None where NVIDIA's creator makes none."""
    if _is_disabled(name, args, disabled):
        return None
    program = posixpath.basename(hook_path)
    fixed = [program, "hook"] if program == "nvidia-ctk" else [program]
    return {"hookName": "createContainer", "path": hook_path, "args": [*fixed, name, *_arguments(name, args)],
            "env": ["NVIDIA_CTK_DEBUG=false"]}
