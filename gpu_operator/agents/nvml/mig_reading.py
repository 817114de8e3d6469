"""Enumerating the MIG devices of a MIG-enabled GPU and naming their MIG profiles.

NVML hands out MIG devices by index (0 .. max MIG device count - 1, with gaps answered "not found"). For each
one we read its UUID, its GPU instance and compute instance ids and its attributes. The profile name needs two
lookups, as in go-nvlib: the GPU instance's *profile id* (e.g. 19) is matched against the GPU instance profiles
the parent offers, which gives the profile *index* (e.g. NVML_GPU_INSTANCE_PROFILE_1_SLICE); likewise for the
compute instance. The indices, the MIG memory and the parent's total memory then give the name
(:func:`gpu_operator.agents.nvml.mig_profile.mig_profile_name`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml

from gpu_operator.agents.nvml.errors import (
    NvmlError,
    NvmlGpuLost,
    NvmlInvalidArgument,
    NvmlNotFound,
)
from gpu_operator.agents.nvml.inventory import MigAttributes, MigDevice
from gpu_operator.agents.nvml.library import Handle, NvmlLibrary
from gpu_operator.agents.nvml.mig_profile import mig_profile_name
from gpu_operator.agents.nvml.reading import call, optional

__all__ = ["MigHandle", "read_mig_devices", "attributes_of"]

_log = logging.getLogger(__name__)

_SKIPPED_PROFILE_ERRORS = (NvmlNotFound, NvmlInvalidArgument)


@dataclass(frozen=True, slots=True)
class MigHandle:
    """A MIG device together with the handle that samples it."""

    device: MigDevice
    handle: Handle


def attributes_of(raw: Any) -> MigAttributes:
    """nvmlDeviceGetAttributes' structure as `MigAttributes`."""

    def number(name: str) -> int:
        return int(getattr(raw, name))

    return MigAttributes(
        multiprocessors=number("multiprocessorCount"),
        copy_engines=number("sharedCopyEngineCount"),
        decoders=number("sharedDecoderCount"),
        encoders=number("sharedEncoderCount"),
        jpegs=number("sharedJpegCount"),
        ofas=number("sharedOfaCount"),
        gpu_instance_slices=number("gpuInstanceSliceCount"),
        compute_instance_slices=number("computeInstanceSliceCount"),
        memory_mib=number("memorySizeMB"),
    )


@dataclass
class _ProfileTables:
    """Profile id -> profile index lookups of one parent GPU, filled on first use."""

    gpu_instance: dict[int, int] | None = None
    compute_instance: dict[int, dict[int, int]] = field(default_factory=dict)


def _profile_info(function: Callable[[], Any]) -> Any:
    """A profile description, or None for profile indices this GPU does not offer."""
    try:
        return call(function)
    except NvmlGpuLost:
        raise
    except NvmlError:
        return None


def _gpu_instance_indices(lib: NvmlLibrary, parent: Handle) -> dict[int, int]:
    table: dict[int, int] = {}
    for index in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        info = _profile_info(lambda index=index: lib.nvmlDeviceGetGpuInstanceProfileInfo(parent, index))
        if info is not None:
            table.setdefault(int(info.id), index)
    return table


def _compute_instance_indices(lib: NvmlLibrary, gpu_instance: Handle) -> dict[int, int]:
    table: dict[int, int] = {}
    for index in range(pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT):
        for engines in range(pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT):
            info = _profile_info(
                lambda index=index, engines=engines: lib.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                    gpu_instance, index, engines
                )
            )
            if info is not None:
                table.setdefault(int(info.id), index)
    return table


def _profile(
    lib: NvmlLibrary,
    parent: Handle,
    tables: _ProfileTables,
    ids: tuple[int, int],
    memory_mib: int,
    parent_memory_bytes: int,
) -> str | None:
    gi_id, ci_id = ids
    if tables.gpu_instance is None:
        tables.gpu_instance = _gpu_instance_indices(lib, parent)
    gpu_instance = call(lambda: lib.nvmlDeviceGetGpuInstanceById(parent, gi_id))
    gi_index = tables.gpu_instance.get(int(call(lambda: lib.nvmlGpuInstanceGetInfo(gpu_instance)).profileId))
    if gi_index is None:
        return None
    if gi_index not in tables.compute_instance:
        tables.compute_instance[gi_index] = _compute_instance_indices(lib, gpu_instance)
    compute_instance = call(lambda: lib.nvmlGpuInstanceGetComputeInstanceById(gpu_instance, ci_id))
    ci_profile_id = int(call(lambda: lib.nvmlComputeInstanceGetInfo(compute_instance)).profileId)
    ci_index = tables.compute_instance[gi_index].get(ci_profile_id)
    if ci_index is None:
        return None
    return mig_profile_name(gi_index, ci_index, memory_mib, parent_memory_bytes)


def _one(
    lib: NvmlLibrary,
    parent: tuple[int, str | None, Handle, int | None],
    tables: _ProfileTables,
    position: int,
    handle: Handle,
) -> MigDevice:
    parent_index, parent_uuid, parent_handle, parent_memory_bytes = parent
    gi_id = int(call(lambda: lib.nvmlDeviceGetGpuInstanceId(handle)))
    ci_id = int(call(lambda: lib.nvmlDeviceGetComputeInstanceId(handle)))
    raw = optional(lambda: lib.nvmlDeviceGetAttributes(handle))
    attributes = None if raw is None else attributes_of(raw)
    profile = None
    if attributes is not None and parent_memory_bytes:
        profile = optional(
            lambda: _profile(lib, parent_handle, tables, (gi_id, ci_id), attributes.memory_mib, parent_memory_bytes)
        )
    return MigDevice(
        index=position,
        uuid=optional(lambda: lib.nvmlDeviceGetUUID(handle)),
        parent_index=parent_index,
        parent_uuid=parent_uuid,
        gpu_instance_id=gi_id,
        compute_instance_id=ci_id,
        profile=profile,
        attributes=attributes,
    )


def read_mig_devices(
    lib: NvmlLibrary,
    parent: tuple[int, str | None, Handle, int | None],
) -> tuple[MigHandle, ...]:
    """The MIG devices of one GPU, given (index, UUID, handle, total memory in bytes) of the parent.

    A lost parent raises `NvmlGpuLost`; a MIG device that cannot be read at all is skipped with a warning.
    """
    parent_handle = parent[2]
    count = int(call(lambda: lib.nvmlDeviceGetMaxMigDeviceCount(parent_handle)))
    tables = _ProfileTables()
    found: list[MigHandle] = []
    for position in range(count):
        try:
            handle = call(lambda position=position: lib.nvmlDeviceGetMigDeviceHandleByIndex(parent_handle, position))
            found.append(MigHandle(_one(lib, parent, tables, position, handle), handle))
        except _SKIPPED_PROFILE_ERRORS:
            continue
        except NvmlGpuLost:
            raise
        except NvmlError as error:
            _log.warning("GPU %d: MIG device %d unreadable: %s", parent[0], position, error)
    return tuple(found)
