"""Reading the inventory of one GPU: identity, memory, compute capability, MIG, fabric and NVLinks.

Each field is read on its own (see :mod:`gpu_operator.agents.nvml.reading`), so a field a GPU lacks is simply
None. If the GPU turns out to be lost half-way, what was read so far is kept and the GPU is reported with
`lost=True`; the other GPUs are not affected.
"""

from __future__ import annotations

import ctypes
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pynvml

from gpu_operator.agents.nvml.errors import (
    NvmlArgumentVersionMismatch,
    NvmlError,
    NvmlFunctionNotFound,
    NvmlGpuLost,
)
from gpu_operator.agents.nvml.fields import read_memory
from gpu_operator.agents.nvml.inventory import (
    ComputeCapability,
    FabricInfo,
    FabricState,
    GpuInfo,
    MigMode,
    PciInfo,
)
from gpu_operator.agents.nvml.library import Handle, NvmlLibrary
from gpu_operator.agents.nvml.mig_reading import MigHandle, read_mig_devices
from gpu_operator.agents.nvml.pci import PciBus
from gpu_operator.agents.nvml.reading import FieldReader, call

__all__ = ["DiscoveredGpu", "BRANDS", "discover_gpu", "text"]

_log = logging.getLogger(__name__)

#: nvmlBrandType_t -> the brand as nvidia-smi prints it.
BRANDS: dict[int, str] = {
    pynvml.NVML_BRAND_UNKNOWN: "Unknown",
    pynvml.NVML_BRAND_QUADRO: "Quadro",
    pynvml.NVML_BRAND_TESLA: "Tesla",
    pynvml.NVML_BRAND_NVS: "NVS",
    pynvml.NVML_BRAND_GRID: "GRID",
    pynvml.NVML_BRAND_GEFORCE: "GeForce",
    pynvml.NVML_BRAND_TITAN: "Titan",
    pynvml.NVML_BRAND_NVIDIA_VAPPS: "NVIDIA Virtual Applications",
    pynvml.NVML_BRAND_NVIDIA_VPC: "NVIDIA Virtual PC",
    pynvml.NVML_BRAND_NVIDIA_VCS: "NVIDIA Virtual Compute Server",
    pynvml.NVML_BRAND_NVIDIA_VWS: "NVIDIA RTX Virtual Workstation",
    pynvml.NVML_BRAND_NVIDIA_CLOUD_GAMING: "NVIDIA Cloud Gaming",
    pynvml.NVML_BRAND_QUADRO_RTX: "Quadro RTX",
    pynvml.NVML_BRAND_NVIDIA_RTX: "NVIDIA RTX",
    pynvml.NVML_BRAND_NVIDIA: "NVIDIA",
    pynvml.NVML_BRAND_GEFORCE_RTX: "GeForce RTX",
    pynvml.NVML_BRAND_TITAN_RTX: "Titan RTX",
}


@dataclass(frozen=True, slots=True)
class DiscoveredGpu:
    """A GPU's inventory plus the handles later passes (sampling, events) use."""

    info: GpuInfo
    handle: Handle | None
    mig: tuple[MigHandle, ...] = ()


def text(value: str | bytes) -> str:
    """A string field of an NVML structure (pynvml gives str or bytes depending on the field)."""
    return value.decode() if isinstance(value, bytes) else value


def _pci(raw: Any, bus: PciBus) -> PciInfo:
    bus_id = text(raw.busId)
    return PciInfo(
        bus_id=bus_id,
        device_id=int(raw.pciDeviceId),
        subsystem_id=int(raw.pciSubSystemId),
        device_class=bus.device_class(bus_id),
        numa_node=bus.numa_node(bus_id),
    )


def _fabric_struct(lib: NvmlLibrary, handle: Handle) -> Any:
    info: Any = pynvml.c_nvmlGpuFabricInfoV_t()
    try:
        call(lambda: lib.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info)))
        return info
    except (NvmlFunctionNotFound, NvmlArgumentVersionMismatch):
        # Drivers before the versioned call lack it; drivers that know another version of its structure
        # refuse ours. Both still answer the unversioned call.
        legacy: Any = pynvml.c_nvmlGpuFabricInfo_t()
        call(lambda: lib.nvmlDeviceGetGpuFabricInfo(handle, ctypes.byref(legacy)))
        return legacy


def _fabric_state(value: int) -> FabricState:
    try:
        return FabricState(value)
    except ValueError:
        return FabricState.NOT_SUPPORTED


def _fabric(raw: Any) -> FabricInfo:
    return FabricInfo(
        cluster_uuid=str(uuid.UUID(bytes=bytes(raw.clusterUuid))),
        clique_id=int(raw.cliqueId),
        state=_fabric_state(int(raw.state)),
        status=int(raw.status),
    )


def _nvlinks(lib: NvmlLibrary, handle: Handle) -> tuple[bool, ...]:
    """The state of links 0, 1, ... up to the first link the GPU does not report (raises for link 0)."""
    states: list[bool] = []
    for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
        try:
            states.append(bool(call(lambda link=link: lib.nvmlDeviceGetNvLinkState(handle, link))))
        except NvmlGpuLost:
            raise
        except NvmlError:
            if link == 0:
                raise
            break
    return tuple(states)


class _Collector:
    """Reads fields of one GPU into a dict, remembering them if the GPU goes away half-way."""

    def __init__(self, reader: FieldReader, index: int) -> None:
        self.reader = reader
        self.index = index
        self.values: dict[str, Any] = {}

    def read(self, name: str, function: Callable[[], Any], convert: Callable[[Any], Any] = lambda v: v) -> Any:
        raw = self.reader.read(self.index, name, function)
        value = None if raw is None else convert(raw)
        self.values[name] = value
        return value


def _identity(lib: NvmlLibrary, bus: PciBus, c: _Collector, handle: Handle) -> None:
    c.read("uuid", lambda: lib.nvmlDeviceGetUUID(handle), text)
    c.read("name", lambda: lib.nvmlDeviceGetName(handle), text)
    c.read("brand", lambda: lib.nvmlDeviceGetBrand(handle), lambda v: BRANDS.get(int(v), "Unknown"))
    c.read("serial", lambda: lib.nvmlDeviceGetSerial(handle), text)
    c.read("vbios_version", lambda: lib.nvmlDeviceGetVbiosVersion(handle), text)
    c.read("pci", lambda: lib.nvmlDeviceGetPciInfo(handle), lambda raw: _pci(raw, bus))
    c.read("minor_number", lambda: lib.nvmlDeviceGetMinorNumber(handle), int)


def _capabilities(lib: NvmlLibrary, c: _Collector, handle: Handle) -> None:
    c.read("memory", lambda: read_memory(lib, handle))
    c.read(
        "compute_capability",
        lambda: lib.nvmlDeviceGetCudaComputeCapability(handle),
        lambda v: ComputeCapability(int(v[0]), int(v[1])),
    )
    c.read("mig_mode", lambda: lib.nvmlDeviceGetMigMode(handle), lambda v: MigMode(int(v[0]) == 1, int(v[1]) == 1))
    c.read("fabric", lambda: _fabric_struct(lib, handle), _fabric)
    c.read("nvlinks", lambda: _nvlinks(lib, handle))


def _mig_devices(lib: NvmlLibrary, c: _Collector, handle: Handle) -> tuple[MigHandle, ...]:
    """The MIG devices of a GPU whose MIG mode is on; none (with a warning) if they cannot be listed."""
    mode: MigMode | None = c.values["mig_mode"]
    if mode is None or not mode.current:
        return ()
    memory = c.values["memory"]
    parent = (c.index, c.values["uuid"], handle, None if memory is None else memory.total)
    try:
        return read_mig_devices(lib, parent)
    except NvmlGpuLost:
        raise
    except NvmlError as error:
        _log.warning("GPU %d: cannot list its MIG devices: %s", c.index, error)
        return ()


def discover_gpu(lib: NvmlLibrary, reader: FieldReader, bus: PciBus, index: int) -> DiscoveredGpu:
    """Everything the inventory holds about GPU `index`."""
    try:
        handle = call(lambda: lib.nvmlDeviceGetHandleByIndex(index))
    except NvmlError as error:
        _log.warning("GPU %d: no handle (%s); reporting it lost", index, error)
        return DiscoveredGpu(GpuInfo(index=index, uuid=None, lost=True), None)
    c = _Collector(reader, index)
    try:
        _identity(lib, bus, c, handle)
        _capabilities(lib, c, handle)
        mig = _mig_devices(lib, c, handle)
    except NvmlGpuLost as error:
        _log.warning("GPU %d is lost: %s", index, error)
        return DiscoveredGpu(GpuInfo(index=index, lost=True, **_known(c.values)), handle)
    values = dict(c.values)
    values["nvlinks"] = values["nvlinks"] or ()
    info = GpuInfo(index=index, mig_devices=tuple(m.device for m in mig), **values)
    return DiscoveredGpu(info, handle, mig)


def _known(values: dict[str, Any]) -> dict[str, Any]:
    """The fields read before a GPU was lost, in `GpuInfo`'s terms."""
    known = {k: v for k, v in values.items() if v is not None}
    known.setdefault("uuid", None)
    return known
