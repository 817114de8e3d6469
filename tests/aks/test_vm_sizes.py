"""The GPU VM size catalog: the families the issue names, consistent GPU facts, MIG and InfiniBand."""

from __future__ import annotations

import pytest

from gpu_operator.aks.vm_sizes import CONNECTX6_VF, CONNECTX7_VF, VM_SIZES, GpuVmSize, vm_size
from gpu_operator.mig.catalog import GPU_80GB, GPU_MODELS, H100_94GB, H200_141GB, A100_40GB

FAMILIES = {"ND A100 v4", "NDm A100 v4", "ND H100 v5", "ND H200 v5", "NC A100 v4", "NC H100 v5", "NCas T4 v3"}


def test_every_family_of_the_issue_is_in_the_catalog() -> None:
    assert {size.family for size in VM_SIZES.values()} == FAMILIES


@pytest.mark.parametrize("name, model, count, memory, rate, vf", [
    ("Standard_ND96asr_v4", "A100-SXM4-40GB", 8, 40, 200, CONNECTX6_VF),
    ("Standard_ND96amsr_A100_v4", "A100-SXM4-80GB", 8, 80, 200, CONNECTX6_VF),
    ("Standard_ND96isr_H100_v5", "H100-SXM5-80GB", 8, 80, 400, CONNECTX7_VF),
    ("Standard_ND96isr_H200_v5", "H200-141GB", 8, 141, 400, CONNECTX7_VF),
])
def test_nd_sizes_have_eight_gpus_and_one_ib_nic_per_gpu(
    name: str, model: str, count: int, memory: int, rate: int, vf: str
) -> None:
    hardware = VM_SIZES[name].hardware
    assert (hardware.gpu.model, hardware.gpu_count, hardware.gpu.memory_gib) == (model, count, memory)
    assert hardware.infiniband is not None
    assert (hardware.infiniband.nics, hardware.infiniband.rate_gbps, hardware.infiniband.vf_device_id) == (8, rate, vf)


@pytest.mark.parametrize("name, count", [
    ("Standard_NC24ads_A100_v4", 1), ("Standard_NC48ads_A100_v4", 2), ("Standard_NC96ads_A100_v4", 4),
    ("Standard_NC40ads_H100_v5", 1), ("Standard_NC80adis_H100_v5", 2),
    ("Standard_NC4as_T4_v3", 1), ("Standard_NC8as_T4_v3", 1), ("Standard_NC16as_T4_v3", 1),
    ("Standard_NC64as_T4_v3", 4),
])
def test_nc_sizes_have_no_infiniband(name: str, count: int) -> None:
    hardware = VM_SIZES[name].hardware
    assert hardware.gpu_count == count
    assert hardware.infiniband is None


@pytest.mark.parametrize("size", VM_SIZES.values(), ids=list(VM_SIZES))
def test_mig_capability_agrees_with_the_mig_catalog(size: GpuVmSize) -> None:
    gpu = size.hardware.gpu
    assert gpu.mig_capable == (gpu.mig_model is not None)
    if gpu.mig_model is not None:
        assert gpu.mig_model in GPU_MODELS


def test_mig_geometries_match_the_gpu_memory() -> None:
    geometry = {name: size.hardware.gpu.mig_model.geometry for name, size in VM_SIZES.items()
                if size.hardware.gpu.mig_model is not None}
    assert geometry["Standard_ND96asr_v4"] is A100_40GB
    assert geometry["Standard_ND96amsr_A100_v4"] is GPU_80GB
    assert geometry["Standard_ND96isr_H100_v5"] is GPU_80GB
    assert geometry["Standard_NC24ads_A100_v4"] is GPU_80GB
    assert geometry["Standard_NC40ads_H100_v5"] is H100_94GB
    assert geometry["Standard_ND96isr_H200_v5"] is H200_141GB


def test_t4_is_not_mig_capable() -> None:
    gpu = VM_SIZES["Standard_NC4as_T4_v3"].hardware.gpu
    assert (gpu.model, gpu.memory_gib, gpu.mig_capable, gpu.mig_model) == ("Tesla T4", 16, False, None)


def test_lookup_is_case_insensitive_and_unknown_sizes_are_none() -> None:
    assert vm_size("standard_nd96isr_h100_v5") is VM_SIZES["Standard_ND96isr_H100_v5"]
    assert vm_size("Standard_D4ds_v5") is None


def test_names_follow_azure_spelling() -> None:
    for name, size in VM_SIZES.items():
        assert name == size.name and name.startswith("Standard_N")
