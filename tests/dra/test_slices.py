"""ResourceSlice previews: a simulated node's GPUs published the way NVIDIA's DRA driver publishes them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_operator.agents.nvml import open_nvml
from gpu_operator.dra.slices import PublishedDevice, architecture_name, node_devices, resource_slice, semantic_version
from gpu_operator.facts.dra_cel import Quantity, SemVer
from gpu_operator.facts.dra_driver import DEVICES, GPU_DRIVER
from tests.support.schemas import builtin_errors


def devices(profile: str) -> list[PublishedDevice]:
    nvml = open_nvml(f"fake:{profile}")
    try:
        return node_devices(nvml, simulated=True)
    finally:
        nvml.close()


def test_full_gpus_carry_the_drivers_attributes_and_memory_in_bytes() -> None:
    published = devices("h100-8x")
    assert [d.name for d in published] == [f"gpu-{i}" for i in range(8)]
    first = published[0]
    assert first.attributes["type"] == "gpu"
    assert first.attributes["productName"] == "NVIDIA H100 80GB HBM3"
    assert first.attributes["architecture"] == "Hopper"
    assert first.attributes["brand"] == "Nvidia"
    assert first.attributes["cudaComputeCapability"] == SemVer("9.0.0")
    assert first.attributes["driverVersion"] == SemVer("570.124.6")
    assert first.attributes["cudaDriverVersion"] == SemVer("12.8.0")
    assert first.attributes["resource.kubernetes.io/pciBusID"] == "0000:18:00.0"
    assert first.capacity == {"memory": Quantity(81559 << 20)}
    # the simulated PCIe roots: one per NUMA node
    assert {d.attributes["resource.kubernetes.io/pcieRoot"] for d in published} == {"pci0000:00", "pci0000:80"}


@pytest.mark.parametrize("profile", ["h100-8x", "h200-8x", "a100-8x-mig", "a100-4x-mixed-mig", "t4-1x"])
def test_every_published_attribute_and_capacity_is_one_the_driver_publishes(profile: str) -> None:
    for device in devices(profile):
        facts = DEVICES[device.attributes["type"]]  # type: ignore[index]
        for name in device.attributes:
            assert facts.has_attribute(facts.qualified(name)), (device.name, name)
        for name in device.capacity:
            assert facts.has_capacity(f"{GPU_DRIVER}/{name}"), (device.name, name)


def test_mig_gpus_are_published_as_their_mig_devices() -> None:
    published = devices("a100-8x-mig")
    assert published and all(d.attributes["type"] == "mig" for d in published)
    first = published[0]
    assert first.attributes["profile"] == "1g.10gb"
    assert str(first.attributes["parentUUID"]).startswith("GPU-")
    assert first.capacity["memory"] == Quantity(9728 << 20)
    assert first.name.startswith("gpu-0-mig-1g10gb-")
    assert len({d.name for d in published}) == len(published)


@pytest.mark.parametrize("version", ["1.34", "1.36"])
@pytest.mark.parametrize("profile", ["h100-8x", "a100-4x-mixed-mig"])
def test_the_resource_slice_validates_strictly(profile: str, version: str) -> None:
    assert builtin_errors(resource_slice("node-a", devices(profile)), version) == []


def test_slice_values_are_typed_as_the_api_wants() -> None:
    slice_ = resource_slice("node-a", devices("h100-8x"))
    device = slice_["spec"]["devices"][0]
    assert device["attributes"]["driverVersion"] == {"version": "570.124.6"}
    assert device["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:00"}
    assert device["capacity"]["memory"] == {"value": "81559Mi"}
    assert slice_["spec"]["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}


@pytest.mark.parametrize("text, wanted", [("570.124.06", "570.124.6"), ("12.8", "12.8.0"), ("9.0", "9.0.0")])
def test_versions_are_normalised_like_the_driver(text: str, wanted: str) -> None:
    assert semantic_version(text) == SemVer(wanted)


def test_architectures_as_go_nvlib_names_them() -> None:
    assert [architecture_name(*cc) for cc in ((7, 5), (8, 0), (8, 9), (9, 0), (10, 0), (2, 0))] == [
        "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Unknown"]


def test_a_real_nodes_pcie_root_comes_from_sysfs(tmp_path: Path) -> None:
    from gpu_operator.dra.slices import _pcie_root

    devices_dir = tmp_path / "bus" / "pci" / "devices"
    devices_dir.mkdir(parents=True)
    (tmp_path / "devices" / "pci0000:15" / "0000:15:01.0" / "0000:19:00.0").mkdir(parents=True)
    os.symlink("../../../devices/pci0000:15/0000:15:01.0/0000:18:00.0", devices_dir / "0000:19:00.0")
    assert _pcie_root("0000:19:00.0", 0, False, str(tmp_path)) == "pci0000:15"
    assert _pcie_root("0000:99:00.0", 0, False, str(tmp_path)) is None
