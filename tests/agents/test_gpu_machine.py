"""Deciding whether a machine has an NVIDIA GPU from its file system, on fake roots laid out like real machines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.gpu_machine import LIBRARY, find_gpu_evidence, gpu_required


def _touch(root: Path, relative: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_a_machine_without_device_nodes_or_nvml_has_no_gpu(tmp_path: Path) -> None:
    _touch(tmp_path, "dev/null")
    _touch(tmp_path, "dev/nvidiactl-not-a-gpu")
    _touch(tmp_path, "usr/lib/x86_64-linux-gnu/libcuda.so.1")
    evidence = find_gpu_evidence(tmp_path, {})
    assert not evidence.present
    assert "no /dev/nvidia<N> device node" in evidence.describe()


@pytest.mark.parametrize("node", ["dev/nvidia0", "dev/nvidia7"])
def test_a_device_node_is_a_gpu(tmp_path: Path, node: str) -> None:
    _touch(tmp_path, "dev/nvidiactl")
    _touch(tmp_path, node)
    evidence = find_gpu_evidence(tmp_path, {})
    assert evidence.present and evidence.device_nodes == (str(tmp_path / node),)


@pytest.mark.parametrize(
    "library",
    [
        f"usr/lib/x86_64-linux-gnu/{LIBRARY}",  # Debian and Ubuntu packages
        f"usr/lib64/{LIBRARY}",  # RHEL
        f"run/nvidia/driver/usr/lib/x86_64-linux-gnu/{LIBRARY}",  # the GPU operator's driver container
        f"host/usr/lib64/{LIBRARY}",  # the host root mounted into a container
    ],
)
def test_nvml_in_a_loader_directory_or_driver_root_is_a_gpu(tmp_path: Path, library: str) -> None:
    _touch(tmp_path, library)
    assert find_gpu_evidence(tmp_path, {}).libraries == (str(tmp_path / library),)


def test_nvml_named_by_the_loader_cache(tmp_path: Path) -> None:
    _touch(tmp_path, f"opt/nvidia/lib/{LIBRARY}")
    cache = _touch(tmp_path, "etc/ld.so.cache")
    cache.write_bytes(b"glibc-ld.so.cache1.1\0" + LIBRARY.encode() + b"\0/opt/nvidia/lib/" + LIBRARY.encode() + b"\0")
    assert find_gpu_evidence(tmp_path, {}).libraries == (str(tmp_path / "opt/nvidia/lib" / LIBRARY),)


def test_a_stale_cache_entry_is_not_a_gpu(tmp_path: Path) -> None:
    cache = _touch(tmp_path, "etc/ld.so.cache")
    cache.write_bytes(b"\0/opt/nvidia/lib/" + LIBRARY.encode() + b"\0")
    assert not find_gpu_evidence(tmp_path, {}).present


def test_nvml_on_ld_library_path(tmp_path: Path) -> None:
    library = _touch(tmp_path, f"usr/local/nvidia/lib64/{LIBRARY}")
    evidence = find_gpu_evidence(tmp_path, {"LD_LIBRARY_PATH": f"/nowhere:{library.parent}"})
    assert evidence.libraries == (str(library),)


def test_wsl_gpu_is_dxg_with_wsls_nvml(tmp_path: Path) -> None:
    _touch(tmp_path, "dev/dxg")
    assert not find_gpu_evidence(tmp_path, {}).device_nodes
    _touch(tmp_path, f"usr/lib/wsl/lib/{LIBRARY}")
    assert find_gpu_evidence(tmp_path, {}).device_nodes == (str(tmp_path / "dev/dxg"),)


@pytest.mark.parametrize(
    ("value", "required"),
    [(None, False), ("", False), ("0", False), ("1", True), ("true", True)],
)
def test_gpu_required_values(value: str | None, required: bool) -> None:
    assert gpu_required({} if value is None else {"GPU_REQUIRED": value}) is required


def test_gpu_required_refuses_a_value_that_means_neither() -> None:
    with pytest.raises(
        ValueError,
        match=r"GPU_REQUIRED='sometimes' is neither on nor off: set GPU_REQUIRED=1",
    ):
        gpu_required({"GPU_REQUIRED": "sometimes"})
