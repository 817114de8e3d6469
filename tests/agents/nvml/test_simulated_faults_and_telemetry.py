"""Simulated telemetry is reproducible, and injected faults reach the agents the way real ones would."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.nvml import EventKind, NvmlDriverNotLoaded, open_nvml
from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.empty import EmptyNvml
from gpu_operator.agents.nvml.simulated import (
    SimulatedLibrary,
    SimulatedPciBus,
    load_profile,
)
from gpu_operator.agents.nvml.simulated.telemetry import draw


def _open(reference: str) -> tuple[LibraryNvml, SimulatedLibrary]:
    profile = load_profile(reference)
    library = SimulatedLibrary(profile, sleep=lambda seconds: None)
    return LibraryNvml.open(library, SimulatedPciBus(profile), clock=lambda: 1_700_000_000.0), library


def _profile(tmp_path: Path, text: str) -> str:
    path = tmp_path / "faulty.yaml"
    path.write_text(text)
    return str(path)


def test_same_seed_same_numbers() -> None:
    first, _ = _open("h100-8x")
    second, _ = _open("h100-8x")
    assert [first.sample() for _ in range(3)] == [second.sample() for _ in range(3)]


def test_draws_depend_only_on_their_arguments() -> None:
    assert draw(100, 0, "power", 0, 68000, 125000) == draw(100, 0, "power", 0, 68000, 125000)
    assert 68000 <= draw(100, 0, "power", 0, 68000, 125000) <= 125000
    assert draw(1, 0, "x", 0, 5, 5) == 5


def test_values_stay_in_the_models_ranges_and_counters_grow() -> None:
    nvml, _ = _open("h100-8x")
    samples = [nvml.sample()[0] for _ in range(5)]
    for sample in samples:
        assert sample.timestamp == 1_700_000_000.0
        assert sample.gpu_temp_c is not None and 28 <= sample.gpu_temp_c <= 42
        assert sample.power_usage_mw is not None and 68_000 <= sample.power_usage_mw <= 125_000
        assert sample.memory_clock_mhz == 2619
        assert sample.memory is not None and sample.memory.reserved == 512 << 20
    energy = [s.total_energy_mj for s in samples]
    assert all(e is not None for e in energy)
    assert energy == sorted(energy) and len(set(energy)) == 5
    tx = [s.nvlink_tx_kib for s in samples]
    assert tx == sorted(tx)  # type: ignore[type-var]


def test_t4_lacks_hbm_temperature_row_remapping_and_nvlink() -> None:
    nvml, _ = _open("t4-1x")
    sample = nvml.sample()[0]
    assert sample.memory_temp_c is None
    assert sample.remapped_rows_correctable is None and sample.remapped_rows_failure is None
    assert sample.nvlink_tx_kib is None and sample.nvlink_rx_kib is None
    assert sample.gpu_temp_c is not None and sample.ecc_dbe_volatile == 0
    gpu = nvml.devices()[0]
    assert gpu.nvlinks == () and gpu.mig_mode is None and gpu.fabric is None


def test_one_sampling_pass_costs_a_fixed_number_of_calls() -> None:
    nvml, library = _open("h100-8x")
    nvml.devices()
    library.calls.clear()
    nvml.sample()
    # per GPU: 7 direct readings + 1 field-values call + 1 memory query
    assert sum(library.calls.values()) == 8 * 9
    assert library.calls["nvmlDeviceGetFieldValues"] == 8


def test_mig_enabled_gpus_report_utilisation_per_mig_device_only() -> None:
    nvml, _ = _open("a100-8x-mig")
    sample = nvml.sample()[0]
    assert sample.gpu_util_percent is None and sample.encoder_util_percent is None
    assert len(sample.mig) == 7
    mig = sample.mig[0]
    assert (mig.gpu_instance_id, mig.compute_instance_id) == (7, 0)
    assert mig.memory is not None and mig.memory.total == 9728 << 20


def test_lost_gpu(tmp_path: Path) -> None:
    nvml, _ = _open(_profile(tmp_path, "extends: h100-8x\nfaults: {lostGpus: [3]}\n"))
    gpus = nvml.devices()
    assert [g.lost for g in gpus] == [False, False, False, True, False, False, False, False]
    assert gpus[3].uuid is None and gpus[3].name is None
    assert gpus[4].name == "NVIDIA H100 80GB HBM3"
    samples = nvml.sample()
    assert samples[3].lost and samples[3].power_usage_mw is None
    assert not samples[2].lost and samples[2].power_usage_mw is not None


def test_xid_is_delivered_once(tmp_path: Path) -> None:
    reference = _profile(
        tmp_path,
        "extends: a100-8x-mig\n"
        "faults:\n"
        "  xids: [{gpu: 2, xid: 79}, {gpu: 5, xid: 48, gpuInstance: 9, computeInstance: 0}]\n",
    )
    nvml, _ = _open(reference)
    first = nvml.wait_event(100)
    second = nvml.wait_event(100)
    assert first is not None and second is not None
    assert (first.kind, first.data, first.index, first.gpu_instance_id) == (EventKind.XID, 79, 2, None)
    assert first.uuid == "GPU-86020748-e8ed-48fc-9302-1bbd5dd12e7e"
    assert (second.data, second.index, second.gpu_instance_id, second.compute_instance_id) == (48, 5, 9, 0)
    assert nvml.wait_event(100) is None


def test_idle_event_wait_sleeps_for_its_timeout() -> None:
    profile = load_profile("t4-1x")
    slept: list[float] = []
    library = SimulatedLibrary(profile, sleep=slept.append)
    nvml = LibraryNvml.open(library, SimulatedPciBus(profile))
    assert nvml.wait_event(250) is None
    assert slept == [0.25]


def test_not_supported_fault_degrades_one_field_on_chosen_gpus(tmp_path: Path) -> None:
    reference = _profile(
        tmp_path,
        "extends: h100-8x\nfaults:\n  notSupported:\n"
        "    - {gpus: [0], calls: [nvmlDeviceGetPowerUsage], fields: [83]}\n"
        "    - {calls: [nvmlDeviceGetSerial]}\n",
    )
    nvml, _ = _open(reference)
    first, second = nvml.sample()[:2]
    assert first.power_usage_mw is None and first.total_energy_mj is None
    assert second.power_usage_mw is not None and second.total_energy_mj is not None
    assert {g.serial for g in nvml.devices()} == {None}


def test_init_fault(tmp_path: Path) -> None:
    reference = _profile(tmp_path, "extends: t4-1x\nfaults: {init: DRIVER_NOT_LOADED}\n")
    with pytest.raises(NvmlDriverNotLoaded):
        open_nvml(f"fake:{reference}")
    tolerated = open_nvml(f"fake:{reference}", fail_on_init_error=False)
    assert isinstance(tolerated, EmptyNvml)
    assert tolerated.devices() == ()
    assert [f.address for f in tolerated.pci.nvidia_functions()] == ["0001:00:00.0"]
