"""Compute instances of non-standard profiles (the NVL profile of GB200 racks) are named, never a crash.

The simulated GPU reports the compute instance profile index a placement names, as NVML reports whatever profile
the instance was created with; the adapter resolves it through the profile info the GPU instance offers.
"""

from __future__ import annotations

from pathlib import Path

import pynvml

from gpu_operator.agents.nvml.adapter import LibraryNvml
from gpu_operator.agents.nvml.simulated import SimulatedLibrary, SimulatedPciBus, load_profile

NODE = """\
extends: a100-8x-mig
name: nvl-compute-instance
gpus:
  - model: A100-SXM4-80GB
    uuid: GPU-1179be3c-ec40-4974-80d3-3b8d1e33a4d0
    serial: "8077052565615"
    busId: "00000000:07:00.0"
    minor: 0
    numaNode: 0
    mig:
      current: true
      devices:
        - {{profile: 7g.80gb, gpuInstance: 0, computeProfile: {index}, computeSlices: 7}}
"""


def _mig_devices(tmp_path: Path, index: int) -> tuple:
    path = tmp_path / "node.yaml"
    path.write_text(NODE.format(index=index))
    profile = load_profile(str(path))
    nvml = LibraryNvml.open(SimulatedLibrary(profile, sleep=lambda s: None), SimulatedPciBus(profile))
    (gpu,) = nvml.devices()
    return gpu.mig_devices


def test_the_nvl_compute_instance_profile_is_named(tmp_path: Path) -> None:
    (device,) = _mig_devices(tmp_path, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL)
    assert device.profile == "7g.80gb"
    assert device.gpu_instance_id == 0


def test_the_standard_whole_gpu_compute_instance_is_named_alike(tmp_path: Path) -> None:
    (device,) = _mig_devices(tmp_path, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE)
    assert device.profile == "7g.80gb"
