"""Per-cycle readings: NVLink rates, HPC job files, value exposition, GPM and licensing on simulated GPUs."""

from __future__ import annotations

from pathlib import Path

from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES, ValueKind
from gpu_operator.agents.metrics_exporter.hpc_jobs import read_job_mapping
from gpu_operator.agents.metrics_exporter.rates import NvlinkRates
from gpu_operator.agents.metrics_exporter.render import exposed_value
from gpu_operator.agents.nvml import GpuSample, open_nvml
from gpu_operator.agents.nvml.gpm import (
    GRAPHICS_UTIL,
    PCIE_TX_PER_SEC,
    GpmTarget,
    GpmWatch,
)
from gpu_operator.agents.nvml.licensing import LicenseReader
from gpu_operator.agents.nvml.underlying import library_of


def test_nvlink_bandwidth_rate() -> None:
    rates = NvlinkRates()
    assert rates.update(GpuSample(0, "u", 100.0, nvlink_tx_kib=1_000, nvlink_rx_kib=1_000)) == 0
    assert rates.update(GpuSample(0, "u", 102.0, nvlink_tx_kib=2_001_000, nvlink_rx_kib=2_001_000)) == 2000
    assert rates.update(GpuSample(0, "u", 103.0, nvlink_tx_kib=0, nvlink_rx_kib=0)) == 0  # counters reset
    assert rates.update(GpuSample(1, "v", 100.0)) is None


def test_hpc_job_files(tmp_path: Path) -> None:
    (tmp_path / "0").write_text("1001\n1002\n")
    (tmp_path / "3").write_text("77\n")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "7").mkdir()
    assert read_job_mapping(str(tmp_path)) == {0: ("1001", "1002"), 3: ("77",)}
    assert read_job_mapping(str(tmp_path / "missing")) == {}


def test_values_are_exposed_as_dcgm_formats_them() -> None:
    assert exposed_value(ValueKind.DOUBLE, 71.54249) == 71.542490
    assert exposed_value(ValueKind.DOUBLE, 0.1234567) == 0.123457
    assert exposed_value(ValueKind.INT, 1410) == 1410
    assert FIELD_SOURCES["DCGM_FI_DEV_POWER_USAGE"].kind is ValueKind.DOUBLE


def test_gpm_on_hopper_and_not_before() -> None:
    hopper = open_nvml("fake:h100-8x")
    watch = GpmWatch(library_of(hopper), (GpmTarget(0), GpmTarget(7)))
    assert watch.supported_gpus == (0, 7)
    assert watch.read() == {}
    readings = watch.read()
    assert set(readings) == {GpmTarget(0), GpmTarget(7)}
    assert 0.0 <= readings[GpmTarget(0)][GRAPHICS_UTIL] <= 100.0
    assert 0.0 <= readings[GpmTarget(0)][PCIE_TX_PER_SEC] <= 4096.0
    watch.close()
    ampere = open_nvml("fake:a100-8x-mig")
    assert GpmWatch(library_of(ampere), (GpmTarget(0, 7),)).supported_gpus == ()


def test_licence_status(tmp_path: Path) -> None:
    bare_metal = open_nvml("fake:h100-8x")
    assert LicenseReader(library_of(bare_metal)).status(0) == 0
    guest = tmp_path / "vgpu.yaml"
    guest.write_text("extends: t4-1x\nvgpuHost: {driverVersion: '550.54.16', branch: r550_00}\n")
    assert LicenseReader(library_of(open_nvml(f"fake:{guest}"))).status(0) == 1
    assert LicenseReader(library_of(bare_metal)).status(99) is None
