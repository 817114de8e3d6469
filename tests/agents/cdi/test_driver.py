"""The driver-root lookups behind the CDI specs: SONAMEs, the driver version, programs, hooks and host paths.

Each follows nvidia-container-toolkit v1.20.0: internal/discover/symlinks.go (getSoname), internal/lookup/root/
root.go (inferVersion, updateInfo), pkg/lookup/library.go (NewLibraryLocator) and ldcache.go (newLdcacheLocator),
pkg/lookup/executable.go (assertExecutable), internal/discover/hooks.go (cdiHookCreator.Create, isDisabled,
getFixedArgsForCDIHookCLI) and pkg/nvcdi/transform/root/host-root.go (transformPath).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.cdi.driver import DriverRoot
from gpu_operator.agents.cdi.edits import Layout
from gpu_operator.agents.cdi.elf import soname
from gpu_operator.agents.cdi.hooks import (
    CHMOD,
    CREATE_SYMLINKS,
    ENABLE_CUDA_COMPAT,
    UPDATE_LDCACHE,
    disabled_hooks,
    make_hook,
)
from tests.support.fake_driver_root import elf_library
from tests.support.ld_cache import I386_LIBC6, ld_cache_bytes


def test_soname_is_read_from_the_dynamic_section_and_defaults_to_the_file_name(tmp_path: Path) -> None:
    library = tmp_path / "libcuda.so.580.1"
    library.write_bytes(elf_library("libcuda.so.1"))
    assert soname(str(library)) == "libcuda.so.1"
    text = tmp_path / "libnotelf.so.1"
    text.write_text("not an ELF file")
    assert soname(str(text)) is None
    assert soname(str(tmp_path / "absent.so.1")) is None


def test_the_version_comes_from_libcuda_and_a_missing_driver_names_the_root(tmp_path: Path) -> None:
    lib = tmp_path / "usr/lib64"
    lib.mkdir(parents=True)
    (lib / "libnvidia-ml.so.575.57.08").write_bytes(elf_library("libnvidia-ml.so.1"))
    (lib / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.575.57.08")
    driver = DriverRoot(str(tmp_path), environ={})
    assert driver.version == "575.57.08"
    assert driver.library_dirs == ["/usr/lib64"]
    with pytest.raises(LookupError, match=f"no libcuda.so.<version> or libnvidia-ml.so.<version> under {tmp_path}"):
        _ = DriverRoot(str(tmp_path / "empty"), environ={}).version


def test_programs_are_the_first_executable_on_the_path_under_the_root(tmp_path: Path) -> None:
    for directory, mode in (("opt/bin", 0o644), ("usr/bin", 0o755), ("bin", 0o755)):
        path = tmp_path / directory / "nvidia-smi"
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(mode)
    driver = DriverRoot(str(tmp_path), environ={"PATH": "/opt/bin:/usr/bin"})
    assert driver.program("nvidia-smi") == [str(tmp_path / "usr/bin/nvidia-smi")]
    assert driver.found(driver.program("nvidia-smi"))[0].container_path == "/usr/bin/nvidia-smi"


def test_hooks_are_written_as_nvidias_creator_writes_them() -> None:
    assert make_hook("/usr/bin/nvidia-ctk", UPDATE_LDCACHE, ["/usr/lib64"]) == {
        "hookName": "createContainer", "path": "/usr/bin/nvidia-ctk",
        "args": ["nvidia-ctk", "hook", "update-ldcache", "--folder", "/usr/lib64"], "env": ["NVIDIA_CTK_DEBUG=false"]}
    hook = make_hook("/opt/toolkit/nvidia-cdi-hook", CREATE_SYMLINKS, ["../card1::/dev/dri/by-path/pci-0-card"])
    assert hook is not None and hook["args"] == ["nvidia-cdi-hook", "create-symlinks", "--link",
                                                 "../card1::/dev/dri/by-path/pci-0-card"]
    assert make_hook("/usr/bin/nvidia-cdi-hook", CREATE_SYMLINKS, []) is None
    assert make_hook("/usr/bin/nvidia-cdi-hook", CHMOD, ["/dev/dri"]) is None, "chmod is disabled by default"


def test_disabled_hooks_are_left_out_and_all_leaves_out_every_hook() -> None:
    """Issue 27 item 9: CDI_DISABLE_HOOKS as k8s-device-plugin v0.20.0 passes it (internal/cdi/cdi.go `New`,
    nvcdi.WithDisabledHooks) and nvidia-container-toolkit v1.20.0 applies it (internal/discover/hooks.go
    NewHookCreator: `all` gives the allDisabledHookCreator; isDisabled)."""
    disabled = disabled_hooks(["update-ldcache", " "])
    assert make_hook("/usr/bin/nvidia-cdi-hook", UPDATE_LDCACHE, ["/usr/lib64"], disabled) is None
    assert make_hook("/usr/bin/nvidia-cdi-hook", ENABLE_CUDA_COMPAT, ["--host-driver-version=1"], disabled)
    every = disabled_hooks(["all"])
    assert make_hook("/usr/bin/nvidia-cdi-hook", ENABLE_CUDA_COMPAT, [], every) is None
    assert make_hook("/usr/bin/nvidia-cdi-hook", CREATE_SYMLINKS, ["a::b"], every) is None
    with pytest.raises(ValueError, match=r"unknown CDI hook 'update-ld-cache': the hooks are all, create-symlinks"):
        disabled_hooks(["update-ld-cache"])


def _opt_driver(root: Path, version: str = "580.65.06") -> Path:
    """A driver installed in /opt/nvidia/lib, which no library search path names, registered with ldconfig."""
    lib = root / "opt/nvidia/lib"
    lib.mkdir(parents=True)
    for name, so in ((f"libcuda.so.{version}", "libcuda.so.1"), (f"libnvidia-ml.so.{version}", "libnvidia-ml.so.1")):
        (lib / name).write_bytes(elf_library(so))
        (lib / so).symlink_to(name)
    (root / "etc").mkdir()
    (root / "etc/ld.so.cache").write_bytes(ld_cache_bytes([
        ("libcuda.so.1", "/opt/nvidia/lib/libcuda.so.1"), ("libnvidia-ml.so.1", "/opt/nvidia/lib/libnvidia-ml.so.1"),
        ("libcuda.so.1", "/opt/nvidia/lib32/libcuda.so.1", I386_LIBC6)]))
    return lib


def test_a_driver_outside_the_search_paths_is_found_through_the_ld_so_cache(tmp_path: Path) -> None:
    """Issue 27 item 9: nvidia-container-toolkit v1.20.0 pkg/lookup/library.go `NewLibraryLocator` tries the
    search paths, then the root's ld.so.cache (pkg/lookup/ldcache.go newLdcacheLocator: the 64-bit entries and
    the links each resolves through, matched by file name; internal/ldcache/ldcache.go `List`)."""
    lib = _opt_driver(tmp_path)
    driver = DriverRoot(str(tmp_path), environ={})
    assert driver.version == "580.65.06"
    assert driver.library_dirs == ["/opt/nvidia/lib"]
    assert driver.libraries("libnvidia-ml.so.*.*") == [str(lib / "libnvidia-ml.so.580.65.06")]
    assert driver.libraries("libnvidia-ml.so.1") == [str(lib / "libnvidia-ml.so.580.65.06")]
    assert driver.libraries("libGLX_nvidia.so.*") == []


def test_the_search_paths_come_first_and_a_broken_cache_entry_is_skipped(tmp_path: Path) -> None:
    """NewLibraryLocator is `First(search paths, ld.so.cache)`: a match in the search paths ends the lookup; an
    entry whose link chain is broken is skipped (pkg/lookup/symlinks ResolveChain fails)."""
    _opt_driver(tmp_path, "575.57.08")
    usual = tmp_path / "usr/lib64"
    usual.mkdir(parents=True)
    (usual / "libcuda.so.580.1.2").write_bytes(elf_library("libcuda.so.1"))
    assert DriverRoot(str(tmp_path), environ={}).version == "580.1.2"
    (tmp_path / "opt/nvidia/lib/libcuda.so.575.57.08").unlink()
    (usual / "libcuda.so.580.1.2").unlink()
    driver = DriverRoot(str(tmp_path), environ={})
    assert driver.libraries("libcuda.so.*.*") == []
    assert driver.version == "575.57.08", "libnvidia-ml.so.<version> is the next library the version is read from"


def test_host_paths_move_from_the_container_driver_root_to_the_hosts() -> None:
    layout = Layout(DriverRoot("/driver-root", environ={}), host_driver_root="/run/nvidia/driver")
    assert layout.host_path("/driver-root/usr/lib64/libcuda.so.1") == "/run/nvidia/driver/usr/lib64/libcuda.so.1"
    assert layout.host_path("/dev/null") == "/dev/null"
    host = Layout(DriverRoot("/", environ={}), host_driver_root="/")
    assert host.host_path("/usr/bin/nvidia-smi") == "/usr/bin/nvidia-smi"
