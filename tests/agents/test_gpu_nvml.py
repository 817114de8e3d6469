"""The NVML layer and feature discovery against the real driver (`pytest -m gpu` on a machine with a GPU).

The tests skip only on a machine that shows no NVIDIA GPU (`tests/agents/gpu_gate.py` decides, from device nodes
and libraries); where one is present, NVML failing to open through our loader is a failure. Expected values
come from pynvml called directly, so the adapter is checked against NVML itself rather than against itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from gpu_operator.agents.feature_discovery import (
    LabelPolicy,
    MigStrategy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.feature_discovery.product import sanitise
from gpu_operator.agents.nvml import DeviceEvent, Nvml, open_nvml

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20


@pytest.fixture(scope="module")
def nvml() -> Iterator[Nvml]:
    opened = open_nvml("auto")
    try:
        assert opened.system().device_count > 0, "NVML opened but reports no GPU on a machine with NVIDIA devices"
        yield opened
    finally:
        opened.close()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def test_system_facts_match_nvml(nvml: Nvml) -> None:
    system = nvml.system()
    assert system.driver_version == _text(pynvml.nvmlSystemGetDriverVersion())
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", system.driver_version or "")
    assert system.cuda_driver_version == pynvml.nvmlSystemGetCudaDriverVersion()
    assert system.device_count == pynvml.nvmlDeviceGetCount()


def test_inventory_matches_nvml(nvml: Nvml) -> None:
    gpus = nvml.devices()
    assert len(gpus) == pynvml.nvmlDeviceGetCount()
    for gpu in gpus:
        handle = pynvml.nvmlDeviceGetHandleByIndex(gpu.index)
        assert not gpu.lost
        assert gpu.uuid == _text(pynvml.nvmlDeviceGetUUID(handle))
        assert gpu.name == _text(pynvml.nvmlDeviceGetName(handle))
        assert gpu.pci is not None and gpu.pci.bus_id == _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)
        assert gpu.memory is not None and gpu.memory.total == pynvml.nvmlDeviceGetMemoryInfo(handle).total
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        assert gpu.compute_capability is not None
        assert (gpu.compute_capability.major, gpu.compute_capability.minor) == (major, minor)
        assert gpu.minor_number == pynvml.nvmlDeviceGetMinorNumber(handle)


def _nvml_mig_uuids() -> list[str]:
    """The MIG devices' UUIDs as pynvml lists them (none where no GPU has MIG enabled)."""
    uuids = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        try:
            current, _ = pynvml.nvmlDeviceGetMigMode(handle)
        except pynvml.NVMLError_NotSupported:
            continue
        if current != pynvml.NVML_DEVICE_MIG_ENABLE:
            continue
        for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
            try:
                mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
            except pynvml.NVMLError_NotFound:
                continue
            uuids.append(_text(pynvml.nvmlDeviceGetUUID(mig)))
    return uuids


def test_mig_devices_match_nvml_and_have_nvidia_profile_names(nvml: Nvml) -> None:
    devices = [m for g in nvml.devices() for m in g.mig_devices]
    assert sorted(d.uuid or "" for d in devices) == sorted(_nvml_mig_uuids())
    for device in devices:
        assert device.uuid is not None and device.uuid.startswith("MIG-")
        assert device.profile is not None and re.fullmatch(r"(\d+c\.)?\d+g\.\d+gb([+-].+)?", device.profile)


def test_one_sampling_pass(nvml: Nvml) -> None:
    gpus = nvml.devices()
    first = nvml.sample()
    second = nvml.sample()
    assert [s.uuid for s in first] == [g.uuid for g in gpus]
    for before, after, gpu in zip(first, second, gpus, strict=True):
        assert not before.lost
        assert before.gpu_temp_c is not None and 0 < before.gpu_temp_c < 120
        assert before.memory is not None and gpu.memory is not None and before.memory.total == gpu.memory.total
        if before.total_energy_mj is not None and after.total_energy_mj is not None:
            assert after.total_energy_mj >= before.total_energy_mj


def test_event_wait(nvml: Nvml) -> None:
    event = nvml.wait_event(100)
    assert event is None or isinstance(event, DeviceEvent)


def test_feature_discovery_labels(nvml: Nvml) -> None:
    snapshot = take_snapshot(nvml)
    labels = node_labels(snapshot, LabelPolicy(MigStrategy.NONE), None, None)
    system, gpus = snapshot.system, snapshot.gpus
    last_model = gpus[-1].name or ""
    assert labels["nvidia.com/gpu.product"] == sanitise(last_model)
    assert labels["nvidia.com/gpu.count"] == str(sum(g.name == last_model for g in gpus))
    assert labels["nvidia.com/cuda.driver-version.full"] == system.driver_version
    assert labels["nvidia.com/cuda.runtime-version.full"] == f"{system.cuda_major}.{system.cuda_minor}"
    memory = next(g.memory for g in reversed(gpus) if g.name == last_model)
    assert memory is not None and labels["nvidia.com/gpu.memory"] == str(memory.total // MIB)
    assert labels["nvidia.com/mig.capable"] in ("true", "false")


def test_agent_command_on_the_real_driver(nvml: Nvml) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_operator.agents.cli",
            "feature-discovery",
            "--nvml",
            "auto",
            "--oneshot",
            "--output-file",
            "",
            "--use-node-feature-api=false",
            "--no-timestamp",
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert lines["nvidia.com/gpu.product"] == sanitise(nvml.devices()[-1].name or "")
