"""The node status probes on a machine with a real driver (`pytest -m gpu`; skipped only where no GPU shows)."""

from __future__ import annotations

import shutil

import pytest

from gpu_operator.agents.node_status_exporter.driver_check import NvidiaSmiCheck
from gpu_operator.agents.node_status_exporter.pci_count import default_counter
from gpu_operator.agents.nvml import open_nvml

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_count() -> int:
    nvml = open_nvml("auto")
    try:
        count = nvml.system().device_count
    finally:
        nvml.close()
    assert count > 0, "NVML opened but reports no GPU on a machine with NVIDIA devices"
    return count


def test_driver_validation_passes_with_the_hosts_nvidia_smi(gpu_count: int) -> None:
    if not any(shutil.which("nvidia-smi", path=d) for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin")):
        pytest.skip("nvidia-smi is not installed in a system directory here")
    assert NvidiaSmiCheck(host_root="/")()


def test_every_gpu_is_an_nvidia_pci_device(gpu_count: int) -> None:
    assert default_counter("/sys")() >= gpu_count
