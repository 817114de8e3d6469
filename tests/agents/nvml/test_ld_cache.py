"""A host's driver library is found where the host's own loader finds it: its ld.so.cache.

The caches here are written in glibc's format by the test (the new layout alone, and after the legacy table as
older ldconfig writes it); the running system's own cache is read as well.
"""

from __future__ import annotations

import struct
from pathlib import Path

from gpu_operator.agents.nvml.ld_cache import cached_paths
from gpu_operator.agents.nvml.loader import candidate_libraries

MAGIC = b"glibc-ld.so.cache1.1"
X86_64_LIBC6 = 0x0303


def _cache(entries: list[tuple[str, str]], legacy_prefix: bool = False) -> bytes:
    header_size = len(MAGIC) + 4 + 4 + 4 + 4 + 12
    strings = b""
    offsets = []
    table_end = header_size + 24 * len(entries)
    for key, value in entries:
        key_at = table_end + len(strings)
        strings += key.encode() + b"\0"
        value_at = table_end + len(strings)
        strings += value.encode() + b"\0"
        offsets.append((key_at, value_at))
    new = MAGIC + struct.pack("<II4xI12x", len(entries), len(strings), 0)
    new += b"".join(struct.pack("<iIIIQ", X86_64_LIBC6, k, v, 0, 0) for k, v in offsets)
    new += strings
    if not legacy_prefix:
        return new
    old = b"ld.so-1.7.0" + struct.pack("<I", 0)
    return old + b"\0" * (-len(old) % 8) + new


def _host(tmp_path: Path, cache: bytes) -> Path:
    root = tmp_path / "host"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "ld.so.cache").write_bytes(cache)
    library = root / "opt" / "nvidia" / "lib" / "libnvidia-ml.so.580.82.07"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\x7fELF")
    (library.parent / "libnvidia-ml.so.1").symlink_to("/opt/nvidia/lib/libnvidia-ml.so.580.82.07")
    return root


ENTRIES = [("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"), ("libnvidia-ml.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1")]


def test_the_cache_lists_the_library(tmp_path: Path) -> None:
    for legacy in (False, True):
        root = _host(tmp_path / str(legacy), _cache(ENTRIES, legacy))
        assert list(cached_paths(str(root), "libnvidia-ml.so.1")) == ["/opt/nvidia/lib/libnvidia-ml.so.1"]
        assert list(cached_paths(str(root), "libcuda.so.1")) == []


def test_a_driver_outside_the_usual_directories_is_a_candidate(tmp_path: Path) -> None:
    root = _host(tmp_path, _cache(ENTRIES))
    assert list(candidate_libraries([str(root)])) == [str(root / "opt/nvidia/lib/libnvidia-ml.so.580.82.07")]


def test_a_usual_directory_comes_first_and_is_not_listed_twice(tmp_path: Path) -> None:
    root = _host(tmp_path, _cache([*ENTRIES, ("libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1")]))
    usual = root / "usr" / "lib64" / "libnvidia-ml.so.1"
    usual.parent.mkdir(parents=True)
    usual.write_bytes(b"\x7fELF")
    assert list(candidate_libraries([str(root)])) == [
        str(usual), str(root / "opt/nvidia/lib/libnvidia-ml.so.580.82.07")
    ]


def test_missing_truncated_or_foreign_caches_list_nothing(tmp_path: Path) -> None:
    root = tmp_path / "host"
    assert list(cached_paths(str(root), "libnvidia-ml.so.1")) == []
    (root / "etc").mkdir(parents=True)
    for content in (b"", b"not a cache", _cache(ENTRIES)[:40], _cache(ENTRIES)[:60]):
        (root / "etc" / "ld.so.cache").write_bytes(content)
        assert list(cached_paths(str(root), "libnvidia-ml.so.1")) == []


def test_the_running_systems_cache_when_it_is_glibcs(tmp_path: Path) -> None:
    cache = Path("/etc/ld.so.cache")
    if cache.exists() and MAGIC in cache.read_bytes():
        assert any(p.endswith("/libc.so.6") for p in cached_paths("/", "libc.so.6"))
