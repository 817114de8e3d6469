"""glibc's `/etc/ld.so.cache`, written by tests: the new layout alone, or after the legacy `ld.so-1.7.0` table.

Each entry is (library name, path) with the flags of an x86-64 libc6 library, or (name, path, flags) for another
kind (`I386_LIBC6` for a 32-bit one). Offsets of the names and paths count from the new header, as glibc's do.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = ["MAGIC", "X86_64_LIBC6", "I386_LIBC6", "ld_cache_bytes"]

MAGIC = b"glibc-ld.so.cache1.1"
X86_64_LIBC6 = 0x0303
I386_LIBC6 = 0x0003


def ld_cache_bytes(entries: Sequence[tuple[str, str] | tuple[str, str, int]], legacy_prefix: bool = False) -> bytes:
    """The cache file listing `entries` in order."""
    header_size = len(MAGIC) + 4 + 4 + 4 + 4 + 12
    strings = b""
    rows = []
    table_end = header_size + 24 * len(entries)
    for entry in entries:
        key, value = entry[0], entry[1]
        flags = entry[2] if len(entry) > 2 else X86_64_LIBC6  # type: ignore[misc]
        key_at = table_end + len(strings)
        strings += key.encode() + b"\0"
        value_at = table_end + len(strings)
        strings += value.encode() + b"\0"
        rows.append((flags, key_at, value_at))
    new = MAGIC + struct.pack("<II4xI12x", len(entries), len(strings), 0)
    new += b"".join(struct.pack("<iIIIQ", flags, k, v, 0, 0) for flags, k, v in rows)
    new += strings
    if not legacy_prefix:
        return new
    old = b"ld.so-1.7.0" + struct.pack("<I", 0)
    return old + b"\0" * (-len(old) % 8) + new
