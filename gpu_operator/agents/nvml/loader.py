"""Finding `libnvidia-ml.so.1` the way the operands do, and handing it to pynvml.

The GPU operator's containers do not have the driver in their own image: the driver lives on the host or in
the driver container, and is mounted at a driver root (`/driver-root` in the device plugin, `/run/nvidia/driver`
for the containerised driver, `/host` for the host's root). Like the device plugin we look for the library under
each root in the usual library directories and then where that root's own `ld.so.cache` says its loader finds
it - following symlinks *inside* that root - and load the first one that loads. If none does, pynvml falls back to the normal dynamic loader (LD_LIBRARY_PATH, ld.so.cache).

pynvml loads its library only when `pynvml.nvmlLib` is None, so assigning it before `nvmlInit` selects ours.
"""

from __future__ import annotations

import ctypes
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import PurePosixPath

import pynvml

from gpu_operator.agents.nvml.ld_cache import cached_paths

__all__ = [
    "LIBRARY_NAME",
    "LIBRARY_DIRS",
    "DEFAULT_DRIVER_ROOTS",
    "DRIVER_ROOT_ENV",
    "driver_roots",
    "resolve_in_root",
    "candidate_libraries",
    "load_into_pynvml",
    "release_pynvml",
]

_log = logging.getLogger(__name__)

LIBRARY_NAME = "libnvidia-ml.so.1"

#: Library directories under a driver root, in the device plugin's order.
LIBRARY_DIRS: tuple[str, ...] = (
    "usr/lib64",
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
)

#: Where the operands mount a driver root, tried after any root given in the environment.
DEFAULT_DRIVER_ROOTS: tuple[str, ...] = ("/driver-root", "/run/nvidia/driver", "/host")

#: Environment variables naming a driver root, most specific first (container path, then the host path).
DRIVER_ROOT_ENV: tuple[str, ...] = ("DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT", "NVIDIA_DRIVER_ROOT")

_MAX_LINKS = 40


def driver_roots(environ: Mapping[str, str], explicit: Iterable[str] = ()) -> tuple[str, ...]:
    """Roots to search: explicit ones, then those named in the environment, then the defaults.

    `/` is left out: for the root file system the normal loader is the right search.
    """
    ordered = [*explicit, *(environ.get(name, "") for name in DRIVER_ROOT_ENV), *DEFAULT_DRIVER_ROOTS]
    seen: list[str] = []
    for root in ordered:
        if root and root != "/" and root not in seen:
            seen.append(root)
    return tuple(seen)


def resolve_in_root(root: str, path: str) -> str | None:
    """Follow symlinks of `path` (inside `root`) as if `root` were `/`; None if it dangles or loops.

    An absolute link target such as `/usr/lib64/libnvidia-ml.so.570.86.15` means `<root>/usr/lib64/...`.
    """
    current = PurePosixPath(path)
    for _ in range(_MAX_LINKS):
        if not os.path.lexists(current):
            return None
        if not os.path.islink(current):
            return str(current)
        target = PurePosixPath(os.readlink(current))
        current = PurePosixPath(root) / target.relative_to("/") if target.is_absolute() else current.parent / target
    return None


def candidate_libraries(roots: Iterable[str]) -> Iterator[str]:
    """Existing library files under the roots, symlinks resolved within each root, in search order.

    Per root: the usual library directories, then whatever that root's own `ld.so.cache` lists (a host driver
    installed elsewhere and registered with ldconfig, found as the host's loader finds it).
    """
    for root in roots:
        seen: set[str] = set()
        listed = [str(PurePosixPath(root) / directory / LIBRARY_NAME) for directory in LIBRARY_DIRS]
        listed += [str(PurePosixPath(root) / path.lstrip("/")) for path in cached_paths(root, LIBRARY_NAME)]
        for path in listed:
            resolved = resolve_in_root(root, path)
            if resolved is not None and resolved not in seen:
                seen.add(resolved)
                yield resolved


def release_pynvml() -> None:
    """Forget the library pynvml holds, the C function pointers it looked up in it, and its init count.

    The next `nvmlInit` then loads a library afresh (ours, if `load_into_pynvml` runs first). Clearing only
    `nvmlLib` is not enough: pynvml calls through its cached pointers into the old library.
    """
    with pynvml.libLoadLock:
        pynvml.nvmlLib = None
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlLib_refcount = 0


def load_into_pynvml(roots: Iterable[str], loader: Callable[[str], ctypes.CDLL] = ctypes.CDLL) -> str | None:
    """Load the first library found under the roots into pynvml; returns its path.

    Returns None (leaving pynvml to the normal loader) when no root has one that loads, or when pynvml already
    holds a library (NVML is process-wide; a second adapter shares the first one's library).
    """
    if pynvml.nvmlLib is not None:
        return None
    for path in candidate_libraries(roots):
        try:
            library = loader(path)
        except OSError as error:
            _log.warning("cannot load %s: %s", path, error)
            continue
        with pynvml.libLoadLock:
            if pynvml.nvmlLib is None:
                pynvml.nvmlLib = library
        _log.info("using NVML from %s", path)
        return path
    return None
