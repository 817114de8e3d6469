"""The sysfs view of PCI functions, real (over a sysfs tree) and simulated (from a profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.nvml.pci import SysfsPciBus, sysfs_address
from gpu_operator.agents.nvml.simulated import (
    SimulatedPciBus,
    config_space,
    load_profile,
)


def _device(root: Path, address: str, vendor: str, device_class: str, numa: str, config: bytes) -> None:
    folder = root / "bus/pci/devices" / address
    folder.mkdir(parents=True)
    (folder / "vendor").write_text(vendor + "\n")
    (folder / "class").write_text(device_class + "\n")
    (folder / "numa_node").write_text(numa + "\n")
    (folder / "config").write_bytes(config)


def test_sysfs_addresses() -> None:
    assert sysfs_address("00000000:3B:00.0") == "0000:3b:00.0"
    assert sysfs_address("00000001:00:00.0") == "0001:00:00.0"
    assert sysfs_address("00002C74:00:00.0") == "2c74:00:00.0"
    assert sysfs_address("0000:3b:00.0") == "0000:3b:00.0"


def test_sysfs_bus(tmp_path: Path) -> None:
    _device(tmp_path, "0000:3b:00.0", "0x10de", "0x030200", "1", b"\x00" * 256)
    _device(tmp_path, "0000:00:1f.0", "0x8086", "0x060100", "-1", b"\x00" * 64)
    _device(tmp_path, "0000:5e:00.0", "0x10de", "0x030000", "-1", b"\x01" * 256)
    bus = SysfsPciBus(tmp_path)
    assert bus.device_class("00000000:3B:00.0") == "0x030200"
    assert bus.numa_node("00000000:3B:00.0") == 1
    assert bus.numa_node("00000000:5E:00.0") is None
    assert bus.device_class("00000000:AA:00.0") is None
    functions = bus.nvidia_functions()
    assert [(f.address, f.device_class, len(f.config)) for f in functions] == [
        ("0000:3b:00.0", "0x030200", 256),
        ("0000:5e:00.0", "0x030000", 256),
    ]


def test_unscannable_bus_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        SysfsPciBus(tmp_path / "nothing").nvidia_functions()


def test_simulated_bus_answers_from_the_profile() -> None:
    bus = SimulatedPciBus(load_profile("a100-8x-mig"))
    assert bus.device_class("00000000:07:00.0") == "0x030200"
    assert bus.numa_node("00000000:87:00.0") == 7
    functions = bus.nvidia_functions()
    assert len(functions) == 8
    config = functions[0].config
    assert (len(config), config[0:4]) == (256, bytes([0xDE, 0x10, 0xB2, 0x20]))


def test_config_space_of_a_vgpu_carries_the_host_driver() -> None:
    from gpu_operator.agents.nvml.simulated.profile import VgpuHost

    config = config_space(0x1EB810DE, "0x030200", VgpuHost(driver_version="535.54.06", branch="r535_00"))
    assert config[0x06] & 0x10
    assert config[0x34] == 0x60 and config[0x61] == 0x68
    assert config[0x68] == 0x09 and config[0x6B:0x6D] == b"VF"
    assert config[0x6F:0x79].rstrip(b"\0") == b"535.54.06"
