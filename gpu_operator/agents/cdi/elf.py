"""The SONAME of a shared library, read from its ELF dynamic section.

The driver's `.so` symlinks a container needs (`libcuda.so.1 -> libcuda.so.<version>`) are named by each
library's `DT_SONAME`. NVIDIA's toolkit reads it with Go's `debug/elf` (the section of type `SHT_DYNAMIC` and the
string table its `sh_link` names); :func:`soname` reads the same two sections, for 32- and 64-bit files of either
byte order. A file that is not ELF, or has more than one SONAME, has none; a library without the tag is known by
its file name, as NVIDIA's lookup does.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

__all__ = ["soname"]

_MAGIC = b"\x7fELF"
_SHT_DYNAMIC = 6
_DT_NULL = 0
_DT_SONAME = 14


def _read(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    data = handle.read(size)
    if len(data) != size:
        raise ValueError("truncated ELF file")
    return data


def _sonames(handle: BinaryIO) -> list[str]:
    ident = _read(handle, 0, 16)
    if ident[:4] != _MAGIC or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ValueError("not an ELF file")
    wide = ident[4] == 2
    order = "<" if ident[5] == 1 else ">"
    if wide:
        shoff, = struct.unpack(order + "Q", _read(handle, 0x28, 8))
        shentsize, shnum = struct.unpack(order + "HH", _read(handle, 0x3A, 4))
        section, entry = order + "IIQQQQIIQQ", order + "qQ"
    else:
        shoff, = struct.unpack(order + "I", _read(handle, 0x20, 4))
        shentsize, shnum = struct.unpack(order + "HH", _read(handle, 0x2E, 4))
        section, entry = order + "IIIIIIIIII", order + "iI"
    headers = [struct.unpack(section, _read(handle, shoff + i * shentsize, struct.calcsize(section)))
               for i in range(shnum)]
    dynamic = next((h for h in headers if h[1] == _SHT_DYNAMIC), None)
    if dynamic is None:
        return []
    offset, size, link = dynamic[4], dynamic[5], dynamic[6]
    if link >= len(headers):
        raise ValueError("the dynamic section links no string table")
    strings = _read(handle, headers[link][4], headers[link][5])
    names: list[str] = []
    step = struct.calcsize(entry)
    data = _read(handle, offset, size)
    for start in range(0, len(data) - step + 1, step):
        tag, value = struct.unpack_from(entry, data, start)
        if tag == _DT_NULL:
            break
        if tag == _DT_SONAME:
            names.append(strings[value:strings.index(b"\0", value)].decode())
    return names


def soname(path: str) -> str | None:
    """The library's SONAME, its file name when it declares none, None when it is not a readable ELF file."""
    try:
        with open(path, "rb") as handle:
            names = _sonames(handle)
    except (OSError, ValueError, struct.error):
        return None
    if len(names) > 1:
        return None
    return names[0] if names else os.path.basename(path)
