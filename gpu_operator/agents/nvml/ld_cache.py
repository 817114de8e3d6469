"""Reading a root file system's `/etc/ld.so.cache`: where that system's own dynamic loader finds a library.

A host that installs its driver somewhere other than the usual library directories (`/opt/nvidia/lib`, a
distribution's own multiarch path) registers the directory with `ldconfig`, and `nvidia-smi` on the host finds
`libnvidia-ml.so.1` through the cache. Reading the host root's cache (mounted at `/host`) finds it the same way
without running anything in the host's root.

The cache is glibc's binary format: the "new" layout (`glibc-ld.so.cache1.1` header, 24-byte entries whose
string offsets count from that header), either alone (glibc 2.32 on) or after the legacy `ld.so-1.7.0` table.
A file that is missing, truncated or in another format yields nothing: the fixed directories still apply.

:func:`libraries_64` lists every 64-bit ELF library of the cache, as NVIDIA's toolkit reads it for its CDI library
lookup (nvidia-container-toolkit v1.20.0 internal/ldcache/ldcache.go, `List`: entries whose flags say ELF and an
x86-64, AArch64 or ppc64le library).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CACHE_PATH", "cached_paths", "libraries_64"]

CACHE_PATH = "etc/ld.so.cache"

_MAGIC = b"glibc-ld.so.cache1.1"
#: After the magic: nlibs, len_strings, flags (1 byte) + 3 padding, extension_offset, 3 unused words.
_HEADER = struct.Struct("<II4xI12x")
_ENTRY = struct.Struct("<iIIIQ")  # flags, key, value, osversion, hwcap
_TYPE_ELF = 0x0001
_ARCH_MASK = 0xFF00
#: x86-64, AArch64 (lib64) and ppc64le: the architectures whose libraries NVIDIA's reader counts as 64-bit.
_ARCH_64 = frozenset({0x0300, 0x0A00, 0x0500})


def _string(data: bytes, start: int) -> str | None:
    end = data.find(b"\0", start)
    if start >= len(data) or end < 0:
        return None
    return data[start:end].decode("utf-8", "replace")


def _entries(root: str) -> Iterator[tuple[int, str, str | None]]:
    """(flags, key, value) of each entry of the cache under `root`, in the cache's order."""
    try:
        data = (Path(root) / CACHE_PATH).read_bytes()
    except OSError:
        return
    base = data.find(_MAGIC)
    if base < 0:
        return
    header_end = base + len(_MAGIC) + _HEADER.size
    if len(data) < header_end:
        return
    count, _, _ = _HEADER.unpack_from(data, base + len(_MAGIC))
    for number in range(count):
        offset = header_end + number * _ENTRY.size
        if offset + _ENTRY.size > len(data):
            return
        flags, key, value, _, _ = _ENTRY.unpack_from(data, offset)
        name = _string(data, base + key)
        if name is not None:
            yield flags, name, _string(data, base + value)


def cached_paths(root: str, library: str) -> Iterator[str]:
    """The paths (on that system) the cache under `root` lists for the library name, in the cache's order."""
    for _, key, path in _entries(root):
        if key == library and path:
            yield path


def libraries_64(root: str) -> list[str]:
    """The paths (on that system) of the cache's 64-bit ELF libraries, each once, in the cache's order."""
    return list(dict.fromkeys(path for flags, _, path in _entries(root)
                              if path and flags & _TYPE_ELF and flags & _ARCH_MASK in _ARCH_64))
