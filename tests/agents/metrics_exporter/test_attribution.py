"""Device IDs to entity keys, as dcgm-exporter files them."""

from __future__ import annotations

import pytest

from gpu_operator.agents.kubelet import AllocatedDevices
from gpu_operator.agents.metrics_exporter.attribution import (
    PodRef,
    device_keys,
    is_nvidia_resource,
    mig_keys,
    pods_by_device,
    pods_sharing_device,
    shared_replica,
)
from gpu_operator.agents.nvml import open_nvml
from gpu_operator.agents.nvml.simulated import load_profile, mig_uuid

GPU = "GPU-1179be3c-ec40-4974-80d3-3b8d1e33a4d0"
MIG = "MIG-6c1f47b1-3d7e-5a0e-9e8e-0f1d7a5b2c33"
BY_MIG = {MIG: "0-7", f"MIG-{GPU}/7/0": "0-7"}


@pytest.mark.parametrize(
    ("device_id", "keys"),
    [
        (GPU, (GPU,)),
        (f"{GPU}::3", (GPU, f"{GPU}::3")),
        (MIG, ("0-7", MIG[4:], MIG)),
        (f"{MIG}::2", ("0-7", MIG[4:], f"{MIG}::2")),
        (f"MIG-{GPU}/7/0", ("0-7", f"{GPU}/7/0", f"MIG-{GPU}/7/0")),
        ("MIG-unknown", ("unknown", "MIG-unknown")),
        ("nvidia0/gi3", ("0-3", "nvidia0/gi3")),
        ("nvidia1/gi2/vgpu4", ("1-2", "nvidia1/gi2/vgpu4")),
        ("nvidia2/vgpu1", ("nvidia2", "nvidia2/vgpu1")),
        ("3", ("3",)),
    ],
)
def test_device_keys(device_id: str, keys: tuple[str, ...]) -> None:
    assert device_keys(device_id, BY_MIG) == keys


def test_replicas() -> None:
    assert [shared_replica(x) for x in (f"{GPU}::3", "nvidia2/vgpu1", GPU)] == ["3", "1", ""]


def test_nvidia_resources() -> None:
    assert is_nvidia_resource("nvidia.com/gpu")
    assert is_nvidia_resource("nvidia.com/mig-1g.10gb")
    assert not is_nvidia_resource("nvidia.com/gpu.shared")
    assert is_nvidia_resource("nvidia.com/gpu.shared", ["nvidia.com/gpu.shared"])


def test_mig_keys_from_the_inventory() -> None:
    profile = load_profile("a100-4x-mixed-mig")
    keys = mig_keys(open_nvml("fake:a100-4x-mixed-mig").devices())
    parent = profile.gpus[1].uuid
    assert keys[mig_uuid(parent, 3, 0)] == "1-3"
    assert keys[f"MIG-{parent}/3/0"] == "1-3"
    assert len(keys) == 2 * (7 + 4)


def test_last_container_wins_unless_gpus_are_virtual() -> None:
    allocations = [
        AllocatedDevices("a", "ns", "c", "nvidia.com/gpu", (f"{GPU}::0",)),
        AllocatedDevices("b", "ns", "c", "nvidia.com/gpu", (f"{GPU}::1",)),
        AllocatedDevices("n", "ns", "c", "example.com/nic", (GPU,)),
    ]
    assert pods_by_device(allocations, {})[GPU] == PodRef("b", "ns", "c")
    assert pods_sharing_device(allocations, {})[GPU] == [PodRef("a", "ns", "c", "0"), PodRef("b", "ns", "c", "1")]
