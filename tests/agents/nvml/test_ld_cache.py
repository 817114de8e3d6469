"""A host's driver library is found where the host's own loader finds it: its ld.so.cache.

The caches here are written in glibc's format by the test (the new layout alone, and after the legacy table as
older ldconfig writes it); the running system's own cache is read as well.
"""

from __future__ import annotations

from pathlib import Path

from gpu_operator.agents.nvml.ld_cache import cached_paths, libraries_64
from gpu_operator.agents.nvml.loader import candidate_libraries
from tests.support.ld_cache import I386_LIBC6, MAGIC, ld_cache_bytes


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
        root = _host(tmp_path / str(legacy), ld_cache_bytes(ENTRIES, legacy))
        assert list(cached_paths(str(root), "libnvidia-ml.so.1")) == ["/opt/nvidia/lib/libnvidia-ml.so.1"]
        assert list(cached_paths(str(root), "libcuda.so.1")) == []


def test_a_driver_outside_the_usual_directories_is_a_candidate(tmp_path: Path) -> None:
    root = _host(tmp_path, ld_cache_bytes(ENTRIES))
    assert list(candidate_libraries([str(root)])) == [str(root / "opt/nvidia/lib/libnvidia-ml.so.580.82.07")]


def test_a_usual_directory_comes_first_and_is_not_listed_twice(tmp_path: Path) -> None:
    root = _host(tmp_path, ld_cache_bytes([*ENTRIES, ("libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1")]))
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
    for content in (b"", b"not a cache", ld_cache_bytes(ENTRIES)[:40], ld_cache_bytes(ENTRIES)[:60]):
        (root / "etc" / "ld.so.cache").write_bytes(content)
        assert list(cached_paths(str(root), "libnvidia-ml.so.1")) == []


def test_the_running_systems_cache_when_it_is_glibcs(tmp_path: Path) -> None:
    cache = Path("/etc/ld.so.cache")
    if cache.exists() and MAGIC in cache.read_bytes():
        assert any(p.endswith("/libc.so.6") for p in cached_paths("/", "libc.so.6"))


def test_the_64_bit_libraries_are_listed_once_each(tmp_path: Path) -> None:
    """nvidia-container-toolkit v1.20.0 internal/ldcache/ldcache.go `List` (getEntries): ELF entries of a 64-bit
    architecture, each path once; a 32-bit library is left out."""
    root = _host(tmp_path, ld_cache_bytes([*ENTRIES, ("libcuda.so.1", "/usr/lib32/libcuda.so.1", I386_LIBC6),
                                           ("libnvidia-ml.so", "/opt/nvidia/lib/libnvidia-ml.so.1")]))
    assert libraries_64(str(root)) == ["/lib/x86_64-linux-gnu/libc.so.6", "/opt/nvidia/lib/libnvidia-ml.so.1"]
