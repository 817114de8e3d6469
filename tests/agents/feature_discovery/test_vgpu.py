"""vGPU detection from PCI config space, with config spaces assembled byte by byte in the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_operator.agents.feature_discovery import (
    LabelError,
    LabelPolicy,
    node_labels,
    take_snapshot,
)
from gpu_operator.agents.feature_discovery.vgpu import (
    host_driver,
    vendor_capability,
    vgpu_labels,
)
from gpu_operator.agents.nvml import PciFunction, open_nvml


def config(*capabilities: tuple[int, bytes], status: int = 0x10) -> bytes:
    """256 bytes with a capability list; each capability is (offset, bytes starting with id, next)."""
    space = bytearray(256)
    space[0:2] = b"\xde\x10"
    space[0x06] = status
    space[0x34] = capabilities[0][0] if capabilities else 0
    for offset, body in capabilities:
        space[offset : offset + len(body)] = body
    return bytes(space)


# vendor capability at 0x68: id 9, next 0, length 27, "VF", record 0 (length 22), version, branch
VGPU_CAPABILITY = bytes([0x09, 0x00, 27]) + b"VF" + bytes([0x00, 22]) + b"535.54.06\0" + b"r535_00\0\0\0"
PM_TO_VENDOR = bytes([0x01, 0x68, 0x00, 0x00])
PM_ONLY = bytes([0x01, 0x00, 0x00, 0x00])


def function(space: bytes) -> PciFunction:
    return PciFunction("0000:00:05.0", "0x030200", space)


def test_passthrough_gpu_is_not_a_vgpu() -> None:
    assert vgpu_labels([function(config((0x60, PM_ONLY)))]) == {"nvidia.com/vgpu.present": "false"}


def test_vgpu_reports_its_host_driver() -> None:
    space = config((0x60, PM_TO_VENDOR), (0x68, VGPU_CAPABILITY))
    assert vgpu_labels([function(space)]) == {
        "nvidia.com/vgpu.present": "true",
        "nvidia.com/vgpu.host-driver-version": "535.54.06",
        "nvidia.com/vgpu.host-driver-branch": "r535_00",
    }


def test_records_before_the_host_driver_record_are_skipped() -> None:
    # record 7 of length 4, then record 0
    capability = bytes([0x09, 0x00, 31]) + b"VF" + bytes([0x07, 4, 0xAA, 0xBB]) + bytes([0x00, 22])
    capability += b"550.90.07\0" + b"r550_00\0\0\0"
    assert host_driver(capability).version == "550.90.07"


def test_a_vendor_capability_without_vf_signature_is_not_a_vgpu() -> None:
    other = bytes([0x09, 0x00, 8]) + b"XX" + bytes(3)
    assert vgpu_labels([function(config((0x68, other)))]) == {"nvidia.com/vgpu.present": "false"}


def test_no_capability_list_and_broken_chains() -> None:
    assert vendor_capability(config(status=0x00)) is None
    assert vendor_capability(config((0x60, bytes([0xFF, 0x00])))) is None
    assert vendor_capability(config((0x60, bytes([0x01, 0x60])))) is None  # loops onto itself


def test_short_config_space_means_no_vgpu_labels() -> None:
    assert vgpu_labels([function(b"\xde\x10" + bytes(62))]) == {}
    assert vgpu_labels(None) == {}


def test_a_vgpu_without_host_driver_record_is_an_error() -> None:
    truncated = bytes([0x09, 0x00, 10]) + b"VF" + bytes([0x00, 22, 0x35, 0x33, 0x35])
    with pytest.raises(LabelError, match="host driver record"):
        vgpu_labels([function(config((0x68, truncated)))])


def test_simulated_vgpu_guest(tmp_path: Path) -> None:
    path = tmp_path / "guest.yaml"
    path.write_text("extends: t4-1x\nvgpuHost: {driverVersion: 535.54.06, branch: r535_00}\n")
    snapshot = take_snapshot(open_nvml(f"fake:{path}"))
    found = node_labels(snapshot, LabelPolicy(), None, None)
    assert found["nvidia.com/vgpu.present"] == "true"
    assert found["nvidia.com/vgpu.host-driver-version"] == "535.54.06"
    assert found["nvidia.com/vgpu.host-driver-branch"] == "r535_00"
