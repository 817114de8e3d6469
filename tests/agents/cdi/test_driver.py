"""The driver-root lookups behind the CDI specs: SONAMEs, the driver version, programs, hooks and host paths.

Each follows nvidia-container-toolkit v1.20.2: internal/discover/symlinks.go (getSoname), internal/lookup/root/
root.go (inferVersion), pkg/lookup/executable.go (assertExecutable), internal/discover/hooks.go
(cdiHookCreator.Create, getFixedArgsForCDIHookCLI) and pkg/nvcdi/transform/root/host-root.go (transformPath).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.cdi.driver import DriverRoot
from gpu_operator.agents.cdi.edits import Layout
from gpu_operator.agents.cdi.elf import soname
from gpu_operator.agents.cdi.hooks import APPLY_CUDA_MEMORY_LIMITS, CREATE_SYMLINKS, UPDATE_LDCACHE, make_hook
from tests.support.fake_driver_root import elf_library


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
    hook = make_hook("/opt/toolkit/nvidia-cdi-hook", APPLY_CUDA_MEMORY_LIMITS, ["/run/nvidia/driver", "GPU-1"])
    assert hook is not None and hook["hookName"] == "createRuntime"
    assert hook["args"] == ["nvidia-cdi-hook", "apply-cuda-memory-limits", "--driver-root", "/run/nvidia/driver",
                            "--gpu-id", "GPU-1"]
    assert make_hook("/usr/bin/nvidia-cdi-hook", CREATE_SYMLINKS, []) is None


def test_host_paths_move_from_the_container_driver_root_to_the_hosts() -> None:
    layout = Layout(DriverRoot("/driver-root", environ={}), host_driver_root="/run/nvidia/driver")
    assert layout.host_path("/driver-root/usr/lib64/libcuda.so.1") == "/run/nvidia/driver/usr/lib64/libcuda.so.1"
    assert layout.host_path("/dev/null") == "/dev/null"
    host = Layout(DriverRoot("/", environ={}), host_driver_root="/")
    assert host.host_path("/usr/bin/nvidia-smi") == "/usr/bin/nvidia-smi"
