"""The node's MIG state read and written through NVML, in mig-parted's terms.

A GPU's MIG state is its mode and a count of MIG devices per profile (`{"1g.10gb": 7}`, `{"1c.2g.20gb": 2}`).
A MIG device is one GPU instance with one compute instance in it: full-size (`2g.20gb`) or, with a `<C>c.`
prefix, of C compute slices only (`1c.2g.20gb`: a one-slice compute instance in a two-slice GPU instance, which
keeps the GPU instance's memory and engines). GPU instance profiles are resolved by asking the GPU for each
profile *index* (`nvmlDeviceGetGpuInstanceProfileInfo`), whose answer carries the profile *id* the create and
list calls take and the name (`MIG 2g.20gb`); compute instances use the standard compute profile of their
slice count, and NVML refuses one its GPU instance cannot hold. Clearing destroys every compute instance and
then every GPU instance; creating places the largest GPU instances first, so smaller ones fill the gaps they
leave.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pynvml

from gpu_operator.agents.nvml.mig_profile import COMPUTE_INSTANCE_SLICES

__all__ = ["GpuMigState", "MigHardware", "MigHardwareError", "MigModePending", "ProfileInfo"]

#: GPU instance profile indices NVML defines (`NVML_GPU_INSTANCE_PROFILE_COUNT`).
_GI_PROFILE_COUNT = 0x12
#: Compute instance profile indices (`NVML_COMPUTE_INSTANCE_PROFILE_COUNT`).
_CI_PROFILE_COUNT = 0x9
#: Compute slices -> the standard compute instance profile index of that size (1_SLICE .. 6_SLICE).
_COMPUTE_PROFILE = {slices: index for index, slices in COMPUTE_INSTANCE_SLICES.items() if index < 7}
#: Answers meaning "this profile index does not exist here".
_ABSENT = (pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_INVALID_ARGUMENT, pynvml.NVML_ERROR_NOT_FOUND)


class MigHardwareError(RuntimeError):
    """A MIG change the GPU refused or cannot hold."""


class MigModePending(MigHardwareError):
    """A MIG mode change that waits for a GPU reset (or a reboot) to take effect."""


@dataclass(frozen=True, slots=True)
class ProfileInfo:
    name: str
    id: int
    slices: int
    instances: int


@dataclass(frozen=True, slots=True)
class GpuMigState:
    """One GPU: index, PCI id (`0x20B210DE`), MIG capability, mode (and a pending one) and instances per profile."""

    index: int
    pci_id: str
    capable: bool
    enabled: bool
    devices: dict[str, int] = field(default_factory=dict)
    bus_id: str = ""
    pending: bool | None = None

    @property
    def mode_pending(self) -> bool:
        return self.pending is not None and self.pending != self.enabled


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _device_name(gpu_instance: ProfileInfo, compute_slices: int) -> str:
    if compute_slices >= gpu_instance.slices:
        return gpu_instance.name
    return f"{compute_slices}c.{gpu_instance.name}"


class MigHardware:
    """MIG reads and writes on the GPUs of one NVML library (pynvml or the simulated library)."""

    def __init__(self, library: Any) -> None:
        self._lib = library

    def _handle(self, index: int) -> Any:
        return self._lib.nvmlDeviceGetHandleByIndex(index)

    def profiles(self, index: int) -> dict[str, ProfileInfo]:
        """The GPU instance profiles this GPU offers, by go-nvlib name."""
        handle = self._handle(index)
        found: dict[str, ProfileInfo] = {}
        for profile_index in range(_GI_PROFILE_COUNT):
            try:
                info = self._lib.nvmlDeviceGetGpuInstanceProfileInfo(handle, profile_index)
            except pynvml.NVMLError as error:
                if error.value in _ABSENT:
                    continue
                raise
            name = _text(info.name).removeprefix("MIG ")
            found[name] = ProfileInfo(name, info.id, info.sliceCount, info.instanceCount)
        return found

    def device_profiles(self, index: int) -> dict[str, tuple[ProfileInfo, int]]:
        """Every MIG device profile this GPU may hold -> (its GPU instance profile, its compute slices).

        Full-size ones by the GPU instance profile's name, smaller compute instances as `<C>c.<name>`.
        """
        offered: dict[str, tuple[ProfileInfo, int]] = {}
        for profile in self.profiles(index).values():
            for slices in sorted(s for s in _COMPUTE_PROFILE if s <= profile.slices):
                offered[_device_name(profile, slices)] = (profile, slices)
        return offered

    def _compute_instances(self, gpu_instance: Any) -> list[tuple[Any, int]]:
        """The compute instances of a GPU instance, each with its slice count."""
        found: list[tuple[Any, int]] = []
        for ci_profile, slices in COMPUTE_INSTANCE_SLICES.items():
            try:
                instances = self._lib.nvmlGpuInstanceGetComputeInstances(gpu_instance, ci_profile)
            except pynvml.NVMLError as error:
                if error.value in _ABSENT:
                    continue
                raise
            found += [(ci, slices) for ci in instances]
        return found

    def gpus(self) -> list[GpuMigState]:
        states = []
        for index in range(self._lib.nvmlDeviceGetCount()):
            handle = self._handle(index)
            pci = self._lib.nvmlDeviceGetPciInfo(handle)
            pci_id = f"0x{pci.pciDeviceId:08X}"
            bus_id = _text(pci.busId)
            try:
                current, pending = self._lib.nvmlDeviceGetMigMode(handle)
            except pynvml.NVMLError as error:
                if error.value != pynvml.NVML_ERROR_NOT_SUPPORTED:
                    raise
                states.append(GpuMigState(index, pci_id, capable=False, enabled=False, bus_id=bus_id))
                continue
            devices: Counter[str] = Counter()
            if current:
                for profile in self.profiles(index).values():
                    for gpu_instance in self._lib.nvmlDeviceGetGpuInstances(handle, profile.id):
                        for _, slices in self._compute_instances(gpu_instance):
                            devices[_device_name(profile, slices)] += 1
            present = {k: v for k, v in devices.items() if v}
            states.append(GpuMigState(index, pci_id, True, bool(current), present, bus_id, bool(pending)))
        return states

    def clear(self, index: int) -> None:
        """Destroy every compute instance, then every GPU instance, of a MIG-enabled GPU."""
        handle = self._handle(index)
        for profile in self.profiles(index).values():
            for gpu_instance in self._lib.nvmlDeviceGetGpuInstances(handle, profile.id):
                for ci_profile in range(_CI_PROFILE_COUNT):
                    try:
                        compute_instances = self._lib.nvmlGpuInstanceGetComputeInstances(gpu_instance, ci_profile)
                    except pynvml.NVMLError as error:
                        if error.value in _ABSENT:
                            continue
                        raise
                    for compute_instance in compute_instances:
                        self._lib.nvmlComputeInstanceDestroy(compute_instance)
                self._lib.nvmlGpuInstanceDestroy(gpu_instance)

    def set_mode(self, index: int, enabled: bool) -> None:
        """Ask for a MIG mode; on some GPUs it stays pending until a GPU reset (see `GpuMigState.mode_pending`)."""
        mode = pynvml.NVML_DEVICE_MIG_ENABLE if enabled else pynvml.NVML_DEVICE_MIG_DISABLE
        self._lib.nvmlDeviceSetMigMode(self._handle(index), mode)

    def create(self, index: int, devices: dict[str, int]) -> None:
        """Create the MIG devices: per device a GPU instance and its compute instance.

        NVML places each new instance itself, so the order of creation decides whether a mix fits: orders are
        tried largest first, then every other permutation, clearing the GPU between tries, as mig-parted does.
        """
        handle = self._handle(index)
        offered = self.device_profiles(index)
        unknown = sorted(set(devices) - set(offered))
        if unknown:
            listed = ", ".join(offered)
            raise MigHardwareError(f"GPU {index} has no MIG profile {', '.join(unknown)} (it offers {listed})")
        wanted = sorted((n for n, count in devices.items() for _ in range(count)),
                        key=lambda n: -offered[n][0].slices)
        first_error: MigHardwareError | None = None
        for order in dict.fromkeys(itertools.permutations(wanted)):
            try:
                for name in order:
                    self._create_one(handle, index, name, offered[name])
                return
            except MigHardwareError as error:
                first_error = first_error or error
                self.clear(index)
        if first_error is not None:
            raise first_error

    def _create_one(self, handle: Any, index: int, name: str, device: tuple[ProfileInfo, int]) -> None:
        profile, slices = device
        try:
            gpu_instance = self._lib.nvmlDeviceCreateGpuInstance(handle, profile.id)
        except pynvml.NVMLError as error:
            raise MigHardwareError(f"GPU {index}: cannot create a {profile.name} instance: {error}") from error
        try:
            self._lib.nvmlGpuInstanceCreateComputeInstance(gpu_instance, _COMPUTE_PROFILE[slices])
        except pynvml.NVMLError as error:
            raise MigHardwareError(
                f"GPU {index}: cannot create the {slices}-slice compute instance of {name}: {error}"
            ) from error
