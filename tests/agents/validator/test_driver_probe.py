"""A failed driver probe leaves no pynvml state behind: the next try loads its own library afresh.

pynvml keeps the loaded library *and* a cache of the C function pointers it looked up in it. Clearing only the
library left the cached pointers of a host library whose NVML would not start, so every later try - the driver
container's library, or the same root once its driver is up - called that host library again and failed
forever under `WITH_WAIT`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pynvml
import pytest

from gpu_operator.agents.nvml import NvmlDriverNotLoaded
from gpu_operator.agents.nvml.loader import load_into_pynvml
from gpu_operator.agents.validator import driver_probe
from gpu_operator.agents.validator.driver_probe import probe_driver
from gpu_operator.agents.validator.errors import ValidationFailed


@pytest.fixture
def pynvml_state() -> Iterator[None]:
    saved = (pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache), pynvml._nvmlLib_refcount)
    try:
        yield
    finally:
        pynvml.nvmlLib = saved[0]
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlGetFunctionPointer_cache.update(saved[1])
        pynvml._nvmlLib_refcount = saved[2]


def _host_library_whose_nvml_will_not_start(*args: Any, **kwargs: Any) -> Any:
    # What pynvml holds after loading the host's library and calling nvmlInit in it.
    pynvml.nvmlLib = object()
    pynvml._nvmlGetFunctionPointer_cache["nvmlInitWithFlags"] = object()
    pynvml._nvmlLib_refcount = 1
    raise NvmlDriverNotLoaded("Driver Not Loaded")


def test_a_failed_probe_forgets_the_library_and_its_function_pointers(pynvml_state: None, tmp_path: Path) -> None:
    with (
        mock.patch.object(driver_probe, "_library_loads"),
        mock.patch.object(driver_probe, "open_nvml", side_effect=_host_library_whose_nvml_will_not_start),
        pytest.raises(ValidationFailed, match="NVML cannot start"),
    ):
        probe_driver("auto", str(tmp_path / "host"))
    assert pynvml.nvmlLib is None
    assert pynvml._nvmlGetFunctionPointer_cache == {}
    assert pynvml._nvmlLib_refcount == 0


def test_the_next_try_loads_the_other_root(pynvml_state: None, tmp_path: Path) -> None:
    # After the host's library failed, the container driver's library is the one pynvml is given.
    loaded: list[str] = []

    def loader(path: str) -> Any:
        loaded.append(path)
        return object()

    container_root = tmp_path / "driver"
    library = container_root / "usr" / "lib64" / "libnvidia-ml.so.1"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\x7fELF")
    with (
        mock.patch.object(driver_probe, "_library_loads"),
        mock.patch.object(driver_probe, "open_nvml", side_effect=_host_library_whose_nvml_will_not_start),
        pytest.raises(ValidationFailed),
    ):
        probe_driver("auto", str(tmp_path / "host"))
    assert load_into_pynvml([str(container_root)], loader=loader) == str(library)
    assert loaded == [str(library)]
