"""Field values carry NVML's own union and type tags, and memory temperature is read unsigned as DCGM reads it.

The simulated NVML answers `nvmlDeviceGetFieldValues` with pynvml's `c_nvmlFieldValue_t`, each value in the union
member and with the type tag the real driver uses; on an R545 driver it reproduces that branch's wrong tag for
memory temperature, which is what made decoding by the tag report 0 degrees.
"""

from __future__ import annotations

from pathlib import Path

import pynvml

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.fields import FIELD_VALUES, decode_field_value
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile

PROFILES = Path(__file__).parents[3] / "gpu_operator" / "agents" / "nvml" / "profiles"


def _library(tmp_path: Path, driver: str) -> tuple[LibraryNvml, SimulatedLibrary]:
    text = (PROFILES / "h100-8x.yaml").read_text().replace('version: "570.124.06"', f'version: "{driver}"', 1)
    path = tmp_path / "node.yaml"
    path.write_text(text)
    profile = load_profile(str(path))
    library = SimulatedLibrary(profile, sleep=lambda seconds: None)
    return LibraryNvml.open(library, SimulatedPciBus(profile), clock=lambda: 1_700_000_000.0), library


def test_the_memory_temperature_member_is_uival_whatever_the_tag() -> None:
    value = pynvml.c_nvmlFieldValue_t()
    value.fieldId = pynvml.NVML_FI_DEV_MEMORY_TEMP
    value.nvmlReturn = pynvml.NVML_SUCCESS
    value.valueType = pynvml.NVML_VALUE_TYPE_DOUBLE
    value.value.uiVal = 71
    memory_temp = next(f for f in FIELD_VALUES if f.field_id == pynvml.NVML_FI_DEV_MEMORY_TEMP)
    assert decode_field_value(value) == 0  # what decoding by the tag gives
    assert decode_field_value(value, memory_temp.member) == 71


def test_simulated_field_values_are_pynvml_structures_with_the_real_tags(tmp_path: Path) -> None:
    _nvml, library = _library(tmp_path, "570.124.06")
    handle = library.nvmlDeviceGetHandleByIndex(0)
    values = library.nvmlDeviceGetFieldValues(
        handle, [pynvml.NVML_FI_DEV_MEMORY_TEMP, pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION]
    )
    assert all(isinstance(v, pynvml.c_nvmlFieldValue_t) for v in values)
    temperature, energy = values
    assert temperature.valueType == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    assert 20 <= temperature.value.uiVal <= 100
    assert energy.valueType == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    assert energy.value.ullVal > 0


def test_memory_temperature_survives_the_r545_type_tag(tmp_path: Path) -> None:
    nvml, library = _library(tmp_path, "545.23.08")
    raw = library.nvmlDeviceGetFieldValues(library.nvmlDeviceGetHandleByIndex(0), [pynvml.NVML_FI_DEV_MEMORY_TEMP])
    assert raw[0].valueType != pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    low, high = 20, 100  # any plausible HBM temperature; decoding by the tag gives 0
    for gpu in nvml.sample():
        assert gpu.memory_temp_c is not None and low <= gpu.memory_temp_c <= high
