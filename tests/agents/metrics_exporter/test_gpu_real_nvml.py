"""The metrics exporter against the real driver (`pytest -m gpu`; skipped only on a machine with no NVIDIA GPU).

Expected values come from pynvml called directly, so the exporter is checked against NVML itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pynvml
import pytest

from gpu_operator.agents.metrics_exporter import Collector
from gpu_operator.agents.nvml import Nvml, open_nvml
from tests.agents.metrics_exporter.support import (
    PROFILING,
    families_of,
    make_collector,
    parse,
)

pytestmark = pytest.mark.gpu

MIB = 1 << 20
#: Seconds between the two collections (GPM metrics come from two samples some time apart).
REAL_INTERVAL = 0.5


@pytest.fixture(scope="module")
def nvml() -> Iterator[Nvml]:
    opened = open_nvml("auto")
    try:
        assert opened.system().device_count > 0, "NVML opened but reports no GPU on a machine with NVIDIA devices"
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def collector(nvml: Nvml) -> Collector:
    return make_collector("real NVML", nvml=nvml)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def test_one_series_per_gpu_with_nvmls_identity(collector: Collector) -> None:
    families = families_of(collector, pause=REAL_INTERVAL)
    temperature = families["DCGM_FI_DEV_GPU_TEMP"].samples
    whole_gpus = [g for g in collector.gpus if not g.mig_enabled]
    assert len([s for s in temperature if "GPU_I_ID" not in s.labels]) == len(whole_gpus)
    for sample in temperature:
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(sample.labels["gpu"]))
        assert sample.labels["UUID"] == _text(pynvml.nvmlDeviceGetUUID(handle))
        assert sample.labels["modelName"] == _text(pynvml.nvmlDeviceGetName(handle))
        assert sample.labels["pci_bus_id"] == _text(pynvml.nvmlDeviceGetPciInfo(handle).busId)
        assert sample.labels["DCGM_FI_DRIVER_VERSION"] == _text(pynvml.nvmlSystemGetDriverVersion())
        assert 0 < sample.value < 120


def test_frame_buffer_adds_up_and_power_is_in_watts(collector: Collector) -> None:
    families = families_of(collector, pause=REAL_INTERVAL)
    for sample in families["DCGM_FI_DEV_FB_USED"].samples:
        if "GPU_I_ID" in sample.labels:
            continue
        index = sample.labels["gpu"]
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(index))
        total = pynvml.nvmlDeviceGetMemoryInfo(handle).total // MIB

        def value(name: str, gpu: str = index) -> float:
            samples = families[name].samples
            return next(s.value for s in samples if s.labels["gpu"] == gpu and "GPU_I_ID" not in s.labels)

        parts = value("DCGM_FI_DEV_FB_USED") + value("DCGM_FI_DEV_FB_FREE") + value("DCGM_FI_DEV_FB_RESERVED")
        assert abs(parts - total) <= 2
        assert 1 < value("DCGM_FI_DEV_POWER_USAGE") < 2000


def test_profiling_metrics_on_hopper_and_later(collector: Collector) -> None:
    families = families_of(collector, pause=REAL_INTERVAL)
    hopper = any(g.compute_capability is not None and g.compute_capability.major >= 9 for g in collector.gpus)
    present = PROFILING & set(families)
    if hopper:
        assert present == PROFILING
        assert all(0.0 <= s.value <= 1.0 for s in families["DCGM_FI_PROF_GR_ENGINE_ACTIVE"].samples)
    else:
        assert present == set()


def test_the_exporter_process_serves_real_gpus(nvml: Nvml) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DCGM_", "GPU_OPERATOR_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "gpu_operator.agents.cli", "metrics-exporter", "--address", f"127.0.0.1:{port}",
         "--collect-interval", "500"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        body = b""
        while b"DCGM_FI_DEV_GPU_TEMP" not in body:
            assert time.monotonic() < deadline, "no GPU metrics from the exporter process"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                    body = response.read()
            except OSError:
                time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            assert response.status == 200
    finally:
        process.terminate()
        process.wait(timeout=20)
    names = {f.name for f in parse(body)}
    assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"} <= names
    assert nvml.system().device_count >= 1
