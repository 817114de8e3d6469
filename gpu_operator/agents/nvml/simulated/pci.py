"""The PCI view of a simulated node: classes, NUMA nodes and config spaces made from the profile.

The config space of each simulated GPU is a minimal but well-formed 256-byte PCI header: NVIDIA's vendor id,
the model's device id, a capability list with a power-management capability and, when the profile names a
vGPU host, NVIDIA's vendor-specific capability with the "VF" signature and a host-driver record (record 0:
ten bytes of version, ten of branch) - the structure GFD reads to label vGPU guests.
"""

from __future__ import annotations

from gpu_operator.agents.nvml.pci import PciFunction, sysfs_address
from gpu_operator.agents.nvml.simulated.profile import NodeProfile, VgpuHost

__all__ = ["SimulatedPciBus", "config_space"]

_CONFIG_SIZE = 256
_STATUS = 0x06
_STATUS_CAPABILITIES = 0x10
_CAPABILITY_POINTER = 0x34
_POWER_MANAGEMENT_AT = 0x60
_VENDOR_CAPABILITY_AT = 0x68
_POWER_MANAGEMENT_ID = 0x01
_VENDOR_SPECIFIC_ID = 0x09
_VGPU_SIGNATURE = b"VF"
_FIELD_LENGTH = 10


def _vendor_capability(host: VgpuHost) -> bytes:
    version = host.driver_version.encode().ljust(_FIELD_LENGTH, b"\0")[:_FIELD_LENGTH]
    branch = host.branch.encode().ljust(_FIELD_LENGTH, b"\0")[:_FIELD_LENGTH]
    record = bytes([0x00, 2 + 2 * _FIELD_LENGTH]) + version + branch
    header_length = 5
    length = header_length + len(record)
    return bytes([_VENDOR_SPECIFIC_ID, 0x00, length]) + _VGPU_SIGNATURE + record


def config_space(pci_device_id: int, pci_class: str, vgpu_host: VgpuHost | None) -> bytes:
    """A 256-byte config space for an NVIDIA function (`pci_device_id` is NVML's 0x<device><vendor>)."""
    config = bytearray(_CONFIG_SIZE)
    config[0:2] = (pci_device_id & 0xFFFF).to_bytes(2, "little")
    config[2:4] = (pci_device_id >> 16).to_bytes(2, "little")
    config[_STATUS] = _STATUS_CAPABILITIES
    class_code = int(pci_class, 16)
    config[0x09:0x0C] = class_code.to_bytes(3, "little")
    config[_CAPABILITY_POINTER] = _POWER_MANAGEMENT_AT
    config[_POWER_MANAGEMENT_AT] = _POWER_MANAGEMENT_ID
    if vgpu_host is not None:
        config[_POWER_MANAGEMENT_AT + 1] = _VENDOR_CAPABILITY_AT
        capability = _vendor_capability(vgpu_host)
        config[_VENDOR_CAPABILITY_AT : _VENDOR_CAPABILITY_AT + len(capability)] = capability
    return bytes(config)


class SimulatedPciBus:
    """`PciBus` answering from a node profile."""

    def __init__(self, profile: NodeProfile) -> None:
        self._profile = profile
        self._by_bus_id = {gpu.bus_id.lower(): index for index, gpu in enumerate(profile.gpus)}

    def _index(self, bus_id: str) -> int | None:
        return self._by_bus_id.get(bus_id.lower())

    def device_class(self, bus_id: str) -> str | None:
        index = self._index(bus_id)
        return None if index is None else self._profile.model_of(index).pci_class

    def numa_node(self, bus_id: str) -> int | None:
        index = self._index(bus_id)
        return None if index is None else self._profile.gpus[index].numa_node

    def nvidia_functions(self) -> tuple[PciFunction, ...]:
        functions = []
        for index, gpu in enumerate(self._profile.gpus):
            model = self._profile.model_of(index)
            config = config_space(model.pci_device_id, model.pci_class, self._profile.vgpu_host)
            functions.append(PciFunction(sysfs_address(gpu.bus_id), model.pci_class, config))
        return tuple(sorted(functions, key=lambda f: f.address))
