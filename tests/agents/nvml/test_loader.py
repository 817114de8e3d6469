"""Finding libnvidia-ml.so.1 under the operands' driver roots and handing it to pynvml."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.nvml import loader


def _library(root: Path, directory: str, target: str | None = None) -> Path:
    """Create <root>/<directory>/libnvidia-ml.so.1, as a file or as a symlink to `target`."""
    folder = root / directory
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / loader.LIBRARY_NAME
    if target is None:
        path.write_bytes(b"\x7fELF")
    else:
        path.symlink_to(target)
    return path


def test_roots_from_environment_come_first_then_the_defaults() -> None:
    env = {"DRIVER_ROOT_CTR_PATH": "/custom", "NVIDIA_DRIVER_ROOT": "/run/nvidia/driver"}
    assert loader.driver_roots(env) == ("/custom", "/run/nvidia/driver", "/driver-root", "/host")


def test_explicit_roots_lead_and_the_host_root_is_left_to_the_loader() -> None:
    assert loader.driver_roots({"NVIDIA_DRIVER_ROOT": "/"}, ["/mnt/driver"]) == (
        "/mnt/driver",
        "/driver-root",
        "/run/nvidia/driver",
        "/host",
    )


def test_library_directories_are_searched_in_the_device_plugins_order(tmp_path: Path) -> None:
    second = _library(tmp_path, "usr/lib/x86_64-linux-gnu")
    first = _library(tmp_path, "usr/lib64")
    assert list(loader.candidate_libraries([str(tmp_path)])) == [str(first), str(second)]


def test_absolute_symlinks_resolve_inside_the_root(tmp_path: Path) -> None:
    real = tmp_path / "usr/lib64/libnvidia-ml.so.570.86.15"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"\x7fELF")
    _library(tmp_path, "lib64", target="/usr/lib64/libnvidia-ml.so.570.86.15")
    found = list(loader.candidate_libraries([str(tmp_path)]))
    assert found == [str(real)]


def test_dangling_and_looping_links_are_skipped(tmp_path: Path) -> None:
    _library(tmp_path, "usr/lib64", target="/usr/lib64/missing.so")
    loop = tmp_path / "lib64"
    loop.mkdir()
    (loop / loader.LIBRARY_NAME).symlink_to(loader.LIBRARY_NAME)
    assert list(loader.candidate_libraries([str(tmp_path)])) == []


def test_first_loadable_library_is_assigned_to_pynvml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    broken = _library(tmp_path / "a", "usr/lib64")
    good = _library(tmp_path / "b", "usr/lib64")
    loaded: list[str] = []

    def fake_cdll(path: str) -> ctypes.CDLL:
        loaded.append(path)
        if path == str(broken):
            raise OSError("wrong ELF class")
        return object()  # type: ignore[return-value]

    path = loader.load_into_pynvml([str(tmp_path / "a"), str(tmp_path / "b")], loader=fake_cdll)
    assert path == str(good)
    assert loaded == [str(broken), str(good)]
    assert pynvml.nvmlLib is not None


def test_nothing_found_leaves_pynvml_to_the_dynamic_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    assert loader.load_into_pynvml([str(tmp_path)]) is None
    assert pynvml.nvmlLib is None


def test_an_already_loaded_library_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = object()
    monkeypatch.setattr(pynvml, "nvmlLib", sentinel)
    _library(tmp_path, "usr/lib64")
    assert loader.load_into_pynvml([str(tmp_path)], loader=lambda p: pytest.fail("must not load")) is None
    assert pynvml.nvmlLib is sentinel


def test_symlinked_directory_components_are_followed(tmp_path: Path) -> None:
    real = tmp_path / "opt/nvidia"
    real.mkdir(parents=True)
    (real / loader.LIBRARY_NAME).write_bytes(b"\x7fELF")
    (tmp_path / "usr").mkdir()
    os.symlink(real, tmp_path / "usr/lib64")
    assert list(loader.candidate_libraries([str(tmp_path)])) == [str(tmp_path / "usr/lib64" / loader.LIBRARY_NAME)]
