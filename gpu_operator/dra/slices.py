"""A node's GPUs as the DRA driver would publish them: a `ResourceSlice` (`resource.k8s.io/v1`) preview.

Read through our NVML layer (real NVML, or a simulated node such as `fake:h100-8x`), each GPU becomes a device
the way the driver's GPU kubelet plugin announces it: named `gpu-<minor>`, with `type`, `uuid`, `productName`,
`brand`, `architecture`, `cudaComputeCapability`, `driverVersion`, `cudaDriverVersion` and the standard
`resource.kubernetes.io/pciBusID` and `pcieRoot`, and its memory as capacity in bytes. A GPU in MIG mode is
published as its MIG devices instead (`type: mig`, `parentUUID`, `profile`, the GPU instance's engines and memory
as capacities); their names follow the driver's `gpu-<minor>-mig-<profile>-...` with the GPU instance and compute
instance ids, since NVML's inventory here does not carry the placement the driver names them by.

Versions are published as the driver publishes them: normalised semantic versions (`570.124.06` becomes
`570.124.6`, CUDA 12080 becomes `12.8.0`, compute capability 9.0 becomes `9.0.0`).

The PCIe root comes from sysfs (the root complex `pci<domain>:<bus>` the GPU's device path starts with). A
simulated node has no sysfs; there the root is the one of the GPU's NUMA node (`pci0000:00` for node 0,
`pci0000:80` for node 1), as two-socket servers number their root buses, and the preview says so.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_operator.facts.dra_cel import Quantity, SemVer
from gpu_operator.facts.dra_driver import GPU_DRIVER, STANDARD_DOMAIN

__all__ = ["PublishedDevice", "node_devices", "resource_slice", "semantic_version", "architecture_name"]

_MIB = 1 << 20

#: Compute capability major -> (lowest minor, architecture) as go-nvlib names it (GetArchitectureAsString).
_ARCHITECTURES: dict[int, tuple[tuple[int, str], ...]] = {
    3: ((0, "Kepler"),),
    5: ((0, "Maxwell"),),
    6: ((0, "Pascal"),),
    7: ((0, "Volta"), (5, "Turing")),
    8: ((0, "Ampere"), (9, "Ada Lovelace")),
    9: ((0, "Hopper"),),
    10: ((0, "Blackwell"),),
    12: ((0, "Blackwell"),),
}
#: The brand as nvidia-smi prints it (our NVML layer) -> as go-nvlib names it (GetBrandAsString).
_BRANDS = {
    "GRID": "Grid", "NVIDIA Virtual Applications": "NvidiaVApps", "NVIDIA Virtual PC": "NvidiaVPC",
    "NVIDIA Virtual Compute Server": "NvidiaVCS", "NVIDIA RTX Virtual Workstation": "NvidiaVWS",
    "NVIDIA Cloud Gaming": "NvidiaCloudGaming", "Quadro RTX": "QuadroRTX", "NVIDIA RTX": "NvidiaRTX",
    "NVIDIA": "Nvidia", "GeForce RTX": "GeForceRTX", "Titan RTX": "TitanRTX",
}
_SYSFS_ROOT = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}\Z")


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a ResourceSlice: its name, and its attributes and capacities as CEL sees them."""

    driver: str
    name: str
    attributes: dict[str, str | int | bool | SemVer]
    capacity: dict[str, Quantity]

    def cel_device(self) -> dict[str, Any]:
        """`device` as a selector sees it: attributes and capacities grouped by domain."""
        attributes: dict[str, dict[str, Any]] = {}
        for name, value in self.attributes.items():
            domain, _, short = (name if "/" in name else f"{self.driver}/{name}").rpartition("/")
            attributes.setdefault(domain, {})[short] = value
        capacity: dict[str, dict[str, Any]] = {self.driver: dict(self.capacity)} if self.capacity else {}
        return {"driver": self.driver, "attributes": attributes, "capacity": capacity,
                "allowMultipleAllocations": False}

    def manifest(self) -> dict[str, Any]:
        """The device as a ResourceSlice lists it."""
        def typed(value: str | int | bool | SemVer) -> dict[str, Any]:
            if isinstance(value, SemVer):
                return {"version": value.text}
            if isinstance(value, bool):
                return {"bool": value}
            if isinstance(value, int):
                return {"int": value}
            return {"string": value}

        device: dict[str, Any] = {"name": self.name, "attributes": {k: typed(v) for k, v in self.attributes.items()}}
        if self.capacity:
            device["capacity"] = {k: {"value": _quantity_text(int(v.value))} for k, v in self.capacity.items()}
        return device


def _quantity_text(value: int) -> str:
    for suffix, unit in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def semantic_version(text: str) -> SemVer:
    """A version as the driver publishes it (Masterminds semver): missing parts are 0, leading zeros dropped."""
    parts = [str(int(part)) for part in text.split("-")[0].split(".")]
    parts += ["0"] * (3 - len(parts))
    return SemVer(".".join(parts[:3]))


def architecture_name(major: int, minor: int) -> str:
    name = "Unknown"
    for lowest, arch in _ARCHITECTURES.get(major, ()):
        if minor >= lowest:
            name = arch
    return name


def _pcie_root(address: str, numa_node: int | None, simulated: bool, sysfs_root: str) -> str | None:
    if simulated:
        return f"pci0000:{0x80 * (numa_node or 0) & 0xff:02x}"
    try:
        target = os.readlink(Path(sysfs_root) / "bus" / "pci" / "devices" / address)
    except OSError:
        return None
    parts = [part for part in target.split("/") if part.startswith("pci")]
    return parts[0] if parts and _SYSFS_ROOT.match(parts[0]) else None


def _sanitise(profile: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", profile.replace(".", "").lower()).strip("-")


def node_devices(nvml: Any, *, simulated: bool, sysfs_root: str = "/sys") -> list[PublishedDevice]:
    """The `gpu.nvidia.com` devices of the node `nvml` describes (an opened :class:`~gpu_operator.agents.nvml.Nvml`)."""
    system = nvml.system()
    common: dict[str, str | int | bool | SemVer] = {}
    if system.driver_version:
        common["driverVersion"] = semantic_version(system.driver_version)
    if system.cuda_major is not None:
        common["cudaDriverVersion"] = semantic_version(f"{system.cuda_major}.{system.cuda_minor}")
    devices: list[PublishedDevice] = []
    for gpu in nvml.devices():
        if gpu.lost or gpu.uuid is None:
            continue
        attrs: dict[str, str | int | bool | SemVer] = {"type": "gpu", "uuid": gpu.uuid}
        if gpu.name:
            attrs["productName"] = gpu.name
        if gpu.brand:
            attrs["brand"] = _BRANDS.get(gpu.brand, gpu.brand)
        if gpu.compute_capability is not None:
            cc = gpu.compute_capability
            attrs["architecture"] = architecture_name(cc.major, cc.minor)
            attrs["cudaComputeCapability"] = semantic_version(f"{cc.major}.{cc.minor}")
        attrs.update(common)
        if gpu.pci is not None:
            attrs[f"{STANDARD_DOMAIN}/pciBusID"] = gpu.pci.sysfs_address
            root = _pcie_root(gpu.pci.sysfs_address, gpu.pci.numa_node, simulated, sysfs_root)
            if root is not None:
                attrs[f"{STANDARD_DOMAIN}/pcieRoot"] = root
        minor = gpu.minor_number if gpu.minor_number is not None else gpu.index
        if gpu.mig_enabled:
            devices += _mig_devices(gpu, attrs, minor)
            continue
        capacity = {"memory": Quantity(gpu.memory.total)} if gpu.memory is not None else {}
        devices.append(PublishedDevice(GPU_DRIVER, f"gpu-{minor}", attrs, capacity))
    return devices


def _mig_devices(gpu: Any, parent: dict[str, str | int | bool | SemVer], minor: int) -> list[PublishedDevice]:
    devices = []
    for mig in gpu.mig_devices:
        if mig.uuid is None or mig.profile is None:
            continue
        attrs = {**parent, "type": "mig", "uuid": mig.uuid, "parentUUID": gpu.uuid, "profile": mig.profile}
        capacity: dict[str, Quantity] = {}
        if mig.attributes is not None:
            a = mig.attributes
            capacity = {
                "multiprocessors": Quantity(a.multiprocessors), "copyEngines": Quantity(a.copy_engines),
                "decoders": Quantity(a.decoders), "encoders": Quantity(a.encoders),
                "jpegEngines": Quantity(a.jpegs), "ofaEngines": Quantity(a.ofas),
                "memory": Quantity(a.memory_mib * _MIB),
            }
        name = f"gpu-{minor}-mig-{_sanitise(mig.profile)}-{mig.gpu_instance_id}-{mig.compute_instance_id}"
        devices.append(PublishedDevice(GPU_DRIVER, name, attrs, capacity))
    return devices


def resource_slice(node_name: str, devices: list[PublishedDevice], driver: str = GPU_DRIVER) -> dict[str, Any]:
    """One ResourceSlice (`resource.k8s.io/v1`) of `driver` on `node_name`, holding `devices`."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver.replace('.', '-')}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [device.manifest() for device in devices if device.driver == driver],
        },
    }
