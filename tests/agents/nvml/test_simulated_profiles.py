"""The shipped simulated nodes describe real hardware as NVML reports it, read through the real adapter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpu_operator.agents.nvml import (
    ComputeCapability,
    MigAttributes,
    MigMode,
    open_nvml,
)
from gpu_operator.agents.nvml.simulated import (
    ProfileError,
    load_profile,
    mig_uuid,
    profile_names,
)

MIB = 1 << 20


def test_shipped_profiles() -> None:
    assert profile_names() == ("a100-4x-mixed-mig", "a100-8x-mig", "h100-8x", "h100-8x-mig", "h200-8x", "t4-1x")


@pytest.mark.parametrize(
    ("profile", "count", "name", "device_id", "memory_mib", "capability", "nvlinks", "mig"),
    [
        ("h100-8x", 8, "NVIDIA H100 80GB HBM3", 0x233010DE, 81559, (9, 0), 18, MigMode(False, False)),
        ("h100-8x-mig", 8, "NVIDIA H100 80GB HBM3", 0x233010DE, 81559, (9, 0), 18, MigMode(True, True)),
        ("h200-8x", 8, "NVIDIA H200", 0x233510DE, 143771, (9, 0), 18, MigMode(False, False)),
        ("a100-8x-mig", 8, "NVIDIA A100-SXM4-80GB", 0x20B210DE, 81920, (8, 0), 12, MigMode(True, True)),
        ("t4-1x", 1, "Tesla T4", 0x1EB810DE, 15360, (7, 5), 0, None),
    ],
)
def test_gpu_facts(
    profile: str,
    count: int,
    name: str,
    device_id: int,
    memory_mib: int,
    capability: tuple[int, int],
    nvlinks: int,
    mig: MigMode | None,
) -> None:
    gpus = open_nvml(f"fake:{profile}").devices()
    assert len(gpus) == count
    for gpu in gpus:
        assert gpu.name == name
        assert gpu.pci is not None and gpu.pci.device_id == device_id
        assert gpu.pci.device_class == "0x030200"
        assert gpu.memory_total_mib == memory_mib
        assert gpu.compute_capability == ComputeCapability(*capability)
        assert len(gpu.nvlinks) == nvlinks
        assert gpu.mig_mode == mig
        assert gpu.uuid is not None and gpu.uuid.startswith("GPU-")
    assert [g.minor_number for g in gpus] == list(range(count))


def test_driver_versions() -> None:
    assert open_nvml("fake:h100-8x").system().driver_version == "570.124.06"
    h200 = open_nvml("fake:h200-8x").system()
    assert (h200.driver_version, h200.cuda_major, h200.cuda_minor) == ("580.95.05", 13, 0)
    t4 = open_nvml("fake:t4-1x").system()
    assert (t4.driver_version, t4.cuda_driver_version, t4.device_count) == ("535.247.01", 12020, 1)


def test_a100_mig_layout_is_all_1g_10gb() -> None:
    gpus = open_nvml("fake:a100-8x-mig").devices()
    first = gpus[0]
    assert first.uuid == "GPU-b899861d-ee8a-4e22-9ef7-b6631aebca29"
    assert first.pci is not None and first.pci.bus_id == "00000000:07:00.0"
    assert [m.gpu_instance_id for m in first.mig_devices] == [7, 8, 9, 10, 11, 12, 13]
    assert {m.profile for g in gpus for m in g.mig_devices} == {"1g.10gb"}
    assert sum(len(g.mig_devices) for g in gpus) == 56
    device = first.mig_devices[0]
    assert device.uuid == mig_uuid(first.uuid, 7, 0)
    assert device.uuid is not None and device.uuid.startswith("MIG-")
    assert (device.parent_index, device.parent_uuid, device.compute_instance_id) == (0, first.uuid, 0)
    assert device.attributes == MigAttributes(
        multiprocessors=14,
        copy_engines=1,
        decoders=0,
        encoders=0,
        jpegs=0,
        ofas=0,
        gpu_instance_slices=1,
        compute_instance_slices=1,
        memory_mib=9728,
    )


def test_h100_mig_devices_have_hoppers_engines() -> None:
    gpus = open_nvml("fake:h100-8x-mig").devices()
    assert {m.profile for g in gpus for m in g.mig_devices} == {"1g.10gb"}
    assert [m.gpu_instance_id for m in gpus[0].mig_devices] == [7, 8, 9, 10, 11, 12, 13]
    assert sum(len(g.mig_devices) for g in gpus) == 56
    # nvidia-smi mig -lgip on H100 80GB: 16 SMs, 1 CE, 1 NVDEC, 0 NVENC, 1 NVJPG, 0 OFA, 9.75 GiB
    assert gpus[0].mig_devices[0].attributes == MigAttributes(
        multiprocessors=16,
        copy_engines=1,
        decoders=1,
        encoders=0,
        jpegs=1,
        ofas=0,
        gpu_instance_slices=1,
        compute_instance_slices=1,
        memory_mib=9984,
    )


def test_mixed_node_has_two_mig_layouts_and_two_plain_gpus() -> None:
    gpus = open_nvml("fake:a100-4x-mixed-mig").devices()
    assert [g.mig_enabled for g in gpus] == [True, True, False, False]
    assert [m.profile for m in gpus[1].mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    assert [m.gpu_instance_id for m in gpus[1].mig_devices] == [2, 3, 9, 10]
    assert gpus[1].mig_devices[0].attributes == MigAttributes(42, 3, 2, 0, 0, 0, 3, 3, 40192)
    assert gpus[2].mig_devices == ()


def test_hgx_fabric_registered_without_a_cluster() -> None:
    gpu = open_nvml("fake:h100-8x").devices()[0]
    assert gpu.fabric is not None
    assert gpu.fabric.cluster_uuid == "00000000-0000-0000-0000-000000000000"
    assert not gpu.fabric.attached
    assert open_nvml("fake:t4-1x").devices()[0].fabric is None


def test_profile_from_a_path_extending_a_shipped_one(tmp_path: Path) -> None:
    path = tmp_path / "domain.yaml"
    path.write_text(
        "extends: h100-8x\n"
        "description: an NVLink domain member\n"
        "models:\n"
        "  H100-SXM5-80GB:\n"
        "    fabric:\n"
        "      {state: completed, status: 0, clusterUuid: 7f9a4f8e-2f35-4c7b-9e0e-0c1d2e3f4a5b, cliqueId: 32766}\n"
    )
    profile = load_profile(str(path))
    assert profile.name == "domain"
    assert profile.driver.version == "570.124.06"
    gpu = open_nvml(f"fake:{path}").devices()[7]
    assert gpu.fabric is not None and gpu.fabric.attached
    assert (gpu.fabric.cluster_uuid, gpu.fabric.clique_id) == ("7f9a4f8e-2f35-4c7b-9e0e-0c1d2e3f4a5b", 32766)
    assert gpu.name == "NVIDIA H100 80GB HBM3"


def _one_gpu(**changes: object) -> dict[str, object]:
    gpu: dict[str, object] = {
        "model": "T4",
        "uuid": "GPU-d3615794-4e42-4b5f-9960-d8fc0896b3bd",
        "serial": "1",
        "busId": "00000000:01:00.0",
        "minor": 0,
    }
    gpu.update(changes)
    return gpu


A100_1G_5GB = {"current": True, "devices": [{"profile": "1g.5gb", "gpuInstance": 7}]}


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"extends": "t4-1x", "gpus": [_one_gpu(model="V100")]}, "unknown model 'V100'"),
        ({"extends": "t4-1x", "gpus": [_one_gpu(mig={"current": True})]}, "is not MIG-capable"),
        (
            {"extends": "a100-8x-mig", "gpus": [_one_gpu(model="A100-SXM4-80GB", mig=A100_1G_5GB)]},
            "has no MIG profile '1g.5gb'",
        ),
        ({"extends": "t4-1x", "faults": {"lostGpus": [3]}}, "faults: no GPU 3"),
        ({"extends": "t4-1x", "gpus": [_one_gpu(uuid="not-a-uuid")]}, "a GPU UUID starts with 'GPU-'"),
        ({"extends": "t4-1x", "unknownKey": 1}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_profiles_are_refused_with_the_reason(
    tmp_path: Path, document: dict[str, object], problem: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ProfileError, match=re.escape(problem)):
        load_profile(str(path))


def test_unknown_names_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no simulated GPU profile named 'b200-8x'"):
        load_profile("b200-8x")
    with pytest.raises(ProfileError, match="no simulated GPU profile at"):
        load_profile(str(tmp_path / "missing.yaml"))


def test_a_profile_cannot_extend_itself(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("extends: loop.yaml\n")
    with pytest.raises(ProfileError, match="extends itself"):
        load_profile(str(path))
