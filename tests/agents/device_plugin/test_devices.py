"""Resources from the node's GPUs: MIG strategies, replicas and the layouts a strategy refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.device_plugin.devices import DeviceError, build_resources
from gpu_operator.agents.device_plugin.settings import MigStrategy, Settings
from gpu_operator.agents.nvml import GpuInfo, open_nvml
from gpu_operator.agents.plugin_config import parse_plugin_config


def _gpus(profile: str) -> tuple[GpuInfo, ...]:
    nvml = open_nvml(f"fake:{profile}")
    try:
        return nvml.devices()
    finally:
        nvml.close()


def _counts(profile: str, strategy: MigStrategy, config: str = "") -> dict[str, int]:
    settings = Settings(mig_strategy=strategy, plugin_config=parse_plugin_config(config or "version: v1"))
    return {r.name: len(r.devices) for r in build_resources(_gpus(profile), settings)}


def test_time_slicing_4_replicas_on_8_gpus_is_32() -> None:
    config = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 4}\n"
    assert _counts("h100-8x", MigStrategy.NONE, config) == {"nvidia.com/gpu": 32}


def test_mig_strategies_on_the_a100_mig_node() -> None:
    assert _counts("a100-8x-mig", MigStrategy.NONE) == {"nvidia.com/gpu": 8}
    assert _counts("a100-8x-mig", MigStrategy.SINGLE) == {"nvidia.com/gpu": 56}
    assert _counts("a100-8x-mig", MigStrategy.MIXED) == {"nvidia.com/mig-1g.10gb": 56}


def test_mixed_node() -> None:
    assert _counts("a100-4x-mixed-mig", MigStrategy.MIXED) == {
        "nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 9, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}


def test_single_refuses_mig_and_non_mig_gpus_together() -> None:
    with pytest.raises(DeviceError, match="GPUs 2, 3 have MIG disabled beside MIG-enabled GPUs"):
        _counts("a100-4x-mixed-mig", MigStrategy.SINGLE)


def test_single_refuses_differing_profiles() -> None:
    gpus = _gpus("a100-4x-mixed-mig")[:2]
    with pytest.raises(DeviceError, match="differing profiles"):
        build_resources(gpus, Settings(mig_strategy=MigStrategy.SINGLE))


def test_single_refuses_an_enabled_gpu_without_mig_devices() -> None:
    gpus = tuple(g if g.index else GpuInfo(**{**{s: getattr(g, s) for s in GpuInfo.__slots__}, "mig_devices": ()})
                 for g in _gpus("a100-8x-mig"))
    with pytest.raises(DeviceError, match="MIG-enabled GPUs 0 have no MIG devices"):
        build_resources(gpus, Settings(mig_strategy=MigStrategy.SINGLE))


def test_mps_on_mig_devices_is_refused() -> None:
    config = parse_plugin_config("version: v1\nsharing:\n  mps:\n    resources:\n      - {name: gpu, replicas: 2}\n")
    with pytest.raises(DeviceError, match="MPS sharing does not support"):
        build_resources(_gpus("a100-8x-mig"), Settings(mig_strategy=MigStrategy.SINGLE, plugin_config=config))


def test_no_gpus_means_no_resources() -> None:
    assert build_resources((), Settings()) == ()


def test_a_required_imex_channel_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    settings = Settings(imex_channel_ids=(0,), imex_required=True, dev_root_ctr_path=str(tmp_path))
    with pytest.raises(DeviceError, match=r"IMEX channel 0 is required .*channel0 does not exist"):
        build_resources(_gpus("t4-1x"), settings)
    channel = tmp_path / "dev" / "nvidia-caps-imex-channels" / "channel0"
    channel.parent.mkdir(parents=True)
    channel.touch()
    assert len(build_resources(_gpus("t4-1x"), settings)) == 1


#: One GPU with a 3g.40gb device and a one-slice compute instance in a 2g.20gb GPU instance, one GPU without MIG.
SMALL_COMPUTE_INSTANCE = """\
extends: a100-8x-mig
gpus:
  - model: A100-SXM4-80GB
    uuid: GPU-1179be3c-ec40-4974-80d3-3b8d1e33a4d0
    serial: "8077052565615"
    busId: "00000000:07:00.0"
    minor: 0
    mig:
      current: true
      devices:
        - {profile: 3g.40gb, gpuInstance: 2}
        - {profile: 2g.20gb, gpuInstance: 3, computeSlices: 1}
  - {model: A100-SXM4-80GB, uuid: GPU-d4bd5d9f-8cf8-4647-9466-241502cd4267, serial: "0776557864232",
     busId: "00000000:47:00.0", minor: 2, mig: {current: false}}
"""


def test_mixed_refuses_a_compute_instance_smaller_than_its_gpu_instance(tmp_path: Path) -> None:
    """Under `mixed`, a `1c.2g.20gb` MIG device stops the plugin with the reason instead of being skipped.

    NVIDIA k8s-device-plugin v0.20.0: internal/rm/rm.go `AddDefaultResourcesToConfig` adds a MIG resource only for
    the profiles whose compute and GPU instance slices are equal (`info.C == info.G`), and internal/rm/device_map.go
    `buildMigDeviceMap` fails when a MIG device's profile matches no resource pattern, which fails `startPlugins`.
    """
    profile = tmp_path / "ci.yaml"
    profile.write_text(SMALL_COMPUTE_INSTANCE)
    gpus = _gpus(str(profile))
    assert [m.profile for m in gpus[0].mig_devices] == ["3g.40gb", "1c.2g.20gb"]
    with pytest.raises(DeviceError, match=r"migStrategy mixed: MIG device 0:1 has profile 1c\.2g\.20gb, whose compute "
                                          r"instance is smaller than its GPU instance.*\(profile 2g\.20gb\)"):
        build_resources(gpus, Settings(mig_strategy=MigStrategy.MIXED))
    # under none the same node is fine: every GPU is advertised whole
    assert _counts(str(profile), MigStrategy.NONE) == {"nvidia.com/gpu": 2}
