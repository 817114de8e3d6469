"""vGPU labels: is this node a vGPU guest, and which vGPU manager runs on its host?

A vGPU shows up in the guest as an NVIDIA PCI function whose config space has NVIDIA's vendor-specific
capability (id 0x09) with the signature "VF" in its bytes 3-4. After the 5-byte header come records of
(id, length, data); record 0 holds the host driver's version (10 bytes) and branch (10 bytes), NUL-padded.

Labels: `nvidia.com/vgpu.present` (`true`/`false`), and with a vGPU `nvidia.com/vgpu.host-driver-version` and
`nvidia.com/vgpu.host-driver-branch`. When the PCI bus cannot be scanned - including config spaces cut short
because the agent is not privileged - no vGPU labels are published; a vGPU whose record cannot be read is an
error.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from gpu_operator.agents.feature_discovery.errors import LabelError, Labels
from gpu_operator.agents.nvml import PciFunction

__all__ = ["VgpuHostDriver", "PciScanError", "vendor_capability", "host_driver", "vgpu_labels"]

_log = logging.getLogger(__name__)

_FULL_CONFIG = 256
_STATUS = 0x06
_STATUS_CAPABILITIES = 0x10
_CAPABILITY_POINTER = 0x34
_CAPABILITY_BROKEN = 0xFF
_VENDOR_SPECIFIC = 0x09
_SIGNATURE = b"VF"
_RECORDS_START = 5
_HOST_DRIVER_RECORD = 0
_FIELD = 10


class PciScanError(Exception):
    """A config space could not be read in full."""


@dataclass(frozen=True, slots=True)
class VgpuHostDriver:
    version: str
    branch: str


def vendor_capability(config: bytes) -> bytes | None:
    """The vendor-specific capability of a config space, or None if it has none."""
    if len(config) < _FULL_CONFIG:
        raise PciScanError("entire PCI configuration space not read (is the agent privileged?)")
    if not config[_STATUS] & _STATUS_CAPABILITIES:
        return None
    visited: set[int] = set()
    position = config[_CAPABILITY_POINTER]
    while position and position not in visited and position + 2 < len(config):
        identifier, following, length = config[position], config[position + 1], config[position + 2]
        if identifier == _CAPABILITY_BROKEN:
            return None
        if identifier == _VENDOR_SPECIFIC:
            return config[position : position + length]
        visited.add(position)
        position = following
    return None


def _is_vgpu(capability: bytes) -> bool:
    return len(capability) >= _RECORDS_START and capability[3:5] == _SIGNATURE


def _field(data: bytes) -> str:
    return data.strip(b"\0").decode("ascii", errors="replace")


def host_driver(capability: bytes) -> VgpuHostDriver:
    """The host driver record of a vGPU capability; raises LabelError if there is none."""
    position = _RECORDS_START
    record = capability[position] if position < len(capability) else None
    while record not in (None, _HOST_DRIVER_RECORD) and position + 1 < len(capability) and capability[position + 1]:
        position += capability[position + 1]
        record = capability[position] if position < len(capability) else None
    start = position + 2
    if record != _HOST_DRIVER_RECORD or start + 2 * _FIELD > len(capability):
        raise LabelError("cannot find the host driver record in the vGPU capability")
    return VgpuHostDriver(
        version=_field(capability[start : start + _FIELD]),
        branch=_field(capability[start + _FIELD : start + 2 * _FIELD]),
    )


def _vgpus(functions: Sequence[PciFunction]) -> list[bytes]:
    capabilities = (vendor_capability(f.config) for f in functions)
    return [c for c in capabilities if c is not None and _is_vgpu(c)]


def vgpu_labels(functions: Sequence[PciFunction] | None) -> Labels:
    """vGPU labels for the NVIDIA PCI functions of the node (None: the bus could not be scanned)."""
    if functions is None:
        return {}
    try:
        vgpus = _vgpus(functions)
    except PciScanError as error:
        _log.warning("no vGPU labels: %s", error)
        return {}
    labels: Labels = {"nvidia.com/vgpu.present": "true" if vgpus else "false"}
    for capability in vgpus:
        driver = host_driver(capability)
        labels["nvidia.com/vgpu.host-driver-version"] = driver.version
        labels["nvidia.com/vgpu.host-driver-branch"] = driver.branch
    return labels
