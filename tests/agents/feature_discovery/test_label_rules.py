"""Individual GFD rules on hand-built node snapshots: names, families, versions, GPU mode, clique, MIG edge cases."""

from __future__ import annotations

import pytest

from gpu_operator.agents.feature_discovery import (
    LabelError,
    LabelPolicy,
    MigStrategy,
    NodeSnapshot,
    node_labels,
)
from gpu_operator.agents.feature_discovery.node_labels import (
    clique_labels,
    gpu_mode_labels,
    machine_labels,
    version_labels,
)
from gpu_operator.agents.feature_discovery.product import (
    architecture_family,
    product_name,
    sanitise,
)
from gpu_operator.agents.nvml import (
    ComputeCapability,
    FabricInfo,
    FabricState,
    GpuInfo,
    MemoryInfo,
    MigAttributes,
    MigDevice,
    MigMode,
    PciInfo,
    SystemInfo,
)

SYSTEM = SystemInfo(driver_version="570.86.15", cuda_driver_version=12080, nvml_version="12.570.86.15", device_count=1)
A100_MIG = MigAttributes(14, 1, 0, 0, 0, 0, 1, 1, 9728)
A100_2G = MigAttributes(28, 2, 1, 0, 0, 0, 2, 2, 19968)


def gpu(index: int = 0, name: str = "NVIDIA A100-SXM4-80GB", **changes: object) -> GpuInfo:
    fields: dict[str, object] = {
        "index": index,
        "uuid": f"GPU-0000000{index}-0000-0000-0000-000000000000",
        "name": name,
        "pci": PciInfo(f"00000000:0{index}:00.0", 0x20B210DE, 0, "0x030200"),
        "memory": MemoryInfo(total=81920 << 20, used=0, free=81920 << 20),
        "compute_capability": ComputeCapability(8, 0),
        "mig_mode": MigMode(False, False),
    }
    fields.update(changes)
    return GpuInfo(**fields)  # type: ignore[arg-type]


def mig(index: int, parent: int, profile: str | None, attributes: MigAttributes = A100_MIG) -> MigDevice:
    return MigDevice(index, f"MIG-{parent}-{index}", parent, None, 7 + index, 0, profile, attributes)


def labels(*gpus: GpuInfo, strategy: MigStrategy = MigStrategy.NONE) -> dict[str, str]:
    return node_labels(NodeSnapshot(SYSTEM, gpus, ()), LabelPolicy(strategy), None, None)


@pytest.mark.parametrize(
    ("text", "sanitised"),
    [
        ("NVIDIA H200", "NVIDIA-H200"),
        ("Tesla T4", "Tesla-T4"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB"),
        ("NVIDIA RTX PRO 6000 Blackwell (Server)", "NVIDIA-RTX-PRO-6000-Blackwell-Server"),
        ("  Standard_ND96isr  H100 v5\n", "Standard_ND96isr-H100-v5"),
        ("GeForce RTX™ 4090", "GeForce-RTX-4090"),
    ],
)
def test_sanitise(text: str, sanitised: str) -> None:
    assert sanitise(text) == sanitised


def test_product_names() -> None:
    assert product_name(["NVIDIA H200", "MIG", "1g.18gb"]) == "NVIDIA-H200-MIG-1g.18gb"
    assert product_name(["Tesla T4"], shared=True) == "Tesla-T4-SHARED"
    assert product_name([None, ""]) is None


@pytest.mark.parametrize(
    ("major", "minor", "family"),
    [
        (1, 3, "tesla"),
        (2, 1, "fermi"),
        (3, 7, "kepler"),
        (5, 2, "maxwell"),
        (6, 0, "pascal"),
        (7, 0, "volta"),
        (7, 2, "volta"),
        (7, 5, "turing"),
        (8, 0, "ampere"),
        (8, 6, "ampere"),
        (8, 9, "ada-lovelace"),
        (9, 0, "hopper"),
        (10, 0, "blackwell"),
        (12, 0, "blackwell"),
        (13, 0, "rubin"),
        (4, 0, "undefined"),
        (11, 0, "undefined"),
    ],
)
def test_families(major: int, minor: int, family: str) -> None:
    assert architecture_family(major, minor) == family


def test_two_part_driver_versions_and_leading_zeros() -> None:
    found = version_labels(SystemInfo("418.40", 10010, None, 1))
    assert (found["nvidia.com/cuda.driver.rev"], found["nvidia.com/cuda.driver-version.revision"]) == ("", "")
    assert found["nvidia.com/cuda.driver-version.full"] == "418.40"
    assert found["nvidia.com/cuda.runtime-version.full"] == "10.1"
    assert version_labels(SystemInfo("550.54.06", 12040, None, 1))["nvidia.com/cuda.driver.rev"] == "06"


@pytest.mark.parametrize("version", ["570", "570.86.15.1", None])
def test_unparseable_driver_versions_are_refused(version: str | None) -> None:
    with pytest.raises(LabelError, match="does not match format"):
        version_labels(SystemInfo(version, 12080, None, 1))


def test_machine_type() -> None:
    assert machine_labels("ND96isr H100 v5\n") == {"nvidia.com/gpu.machine": "ND96isr-H100-v5"}
    assert machine_labels(None) == {"nvidia.com/gpu.machine": "unknown"}


def test_gpu_mode() -> None:
    graphics = PciInfo("00000000:01:00.0", 0x1EB810DE, 0, "0x030000")
    assert gpu_mode_labels([gpu(0), gpu(1)]) == {"nvidia.com/gpu.mode": "compute"}
    assert gpu_mode_labels([gpu(0, pci=graphics)]) == {"nvidia.com/gpu.mode": "graphics"}
    assert gpu_mode_labels([gpu(0), gpu(1, pci=graphics)]) == {"nvidia.com/gpu.mode": "unknown"}
    assert gpu_mode_labels([gpu(0, pci=None)]) == {"nvidia.com/gpu.mode": "unknown"}


def test_clique() -> None:
    domain = "7f9a4f8e-2f35-4c7b-9e0e-0c1d2e3f4a5b"
    member = FabricInfo(domain, 32766, FabricState.COMPLETED, 0)
    joining = FabricInfo(domain, 32766, FabricState.IN_PROGRESS, 0)
    other = FabricInfo(domain, 5, FabricState.COMPLETED, 0)
    assert clique_labels([gpu(0, fabric=member), gpu(1, fabric=joining)]) == {
        "nvidia.com/gpu.clique": "7f9a4f8e-2f35-4c7b-9e0e-0c1d2e3f4a5b.32766"
    }
    assert clique_labels([gpu(0, fabric=member), gpu(1, fabric=other)]) == {}
    assert (
        clique_labels([gpu(0, fabric=FabricInfo("00000000-0000-0000-0000-000000000000", 0, FabricState.COMPLETED, 0))])
        == {}
    )


def test_without_gpus_only_timestamp_and_vgpu_labels() -> None:
    snapshot = NodeSnapshot(SystemInfo(None, None, None, 0), (), ())
    assert node_labels(snapshot, LabelPolicy(), "PowerEdge", 42) == {
        "nvidia.com/gfd.timestamp": "42",
        "nvidia.com/vgpu.present": "false",
    }


def test_lost_gpus_are_left_out_of_the_count() -> None:
    found = labels(gpu(0), gpu(1, lost=True, name=None), gpu(2))
    assert found["nvidia.com/gpu.count"] == "2"


def test_memory_and_architecture_left_out_when_unknown() -> None:
    found = labels(gpu(0, memory=None, compute_capability=ComputeCapability(0, 0)))
    assert "nvidia.com/gpu.memory" not in found and "nvidia.com/gpu.family" not in found
    assert found["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"


def test_several_models_last_one_by_index_wins() -> None:
    found = labels(gpu(0, name="Tesla T4"), gpu(1, name="NVIDIA L4"), gpu(2, name="Tesla T4"))
    assert (found["nvidia.com/gpu.product"], found["nvidia.com/gpu.count"]) == ("NVIDIA-L4", "1")


def test_single_strategy_with_an_empty_mig_gpu_is_invalid() -> None:
    enabled = MigMode(True, True)
    found = labels(
        gpu(0, mig_mode=enabled, mig_devices=(mig(0, 0, "1g.10gb"),)),
        gpu(1, mig_mode=enabled),
        strategy=MigStrategy.SINGLE,
    )
    assert found["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-INVALID"
    assert found["nvidia.com/gpu.count"] == "0"


def test_single_strategy_with_two_profiles_is_invalid() -> None:
    enabled = MigMode(True, True)
    devices = (mig(0, 0, "1g.10gb"), mig(1, 0, "2g.20gb", A100_2G))
    found = labels(gpu(0, mig_mode=enabled, mig_devices=devices), strategy=MigStrategy.SINGLE)
    assert found["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB-MIG-INVALID"


def test_mixed_strategy_ignores_empty_mig_gpus_and_names_me_profiles_with_dots() -> None:
    enabled = MigMode(True, True)
    me = MigAttributes(14, 1, 1, 0, 1, 1, 1, 1, 9728)
    found = labels(
        gpu(0, mig_mode=enabled, mig_devices=(mig(0, 0, "1g.10gb+me", me),)),
        gpu(1, mig_mode=enabled),
        strategy=MigStrategy.MIXED,
    )
    assert found["nvidia.com/mig-1g.10gb.me.product"] == "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb.me"
    assert found["nvidia.com/mig-1g.10gb.me.count"] == "1"
    assert found["nvidia.com/mig-1g.10gb.me.engines.ofa"] == "1"


def test_a_mig_device_without_profile_cannot_be_labelled() -> None:
    enabled = MigMode(True, True)
    with pytest.raises(LabelError, match="cannot determine the MIG profile"):
        labels(gpu(0, mig_mode=enabled, mig_devices=(mig(0, 0, None),)), strategy=MigStrategy.MIXED)
