"""One sampling pass over one GPU: every time-varying field, in as few NVML calls as possible.

A pass is the direct readings of :data:`~gpu_operator.agents.nvml.fields.DIRECT_READINGS`, one field-values
call for :data:`~gpu_operator.agents.nvml.fields.FIELD_VALUES`, the memory query, and the memory query of each
MIG device, and when asked the running compute processes with their latest utilisation samples. Fields a GPU
does not support are skipped from then on; a GPU that is lost yields a sample with `lost=True` and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import pynvml

from gpu_operator.agents.nvml.errors import NvmlGpuLost, error_for_code
from gpu_operator.agents.nvml.fields import (
    DIRECT_READINGS,
    FIELD_VALUES,
    decode_field_value,
    read_memory,
)
from gpu_operator.agents.nvml.library import Handle, NvmlLibrary
from gpu_operator.agents.nvml.mig_reading import MigHandle
from gpu_operator.agents.nvml.reading import FieldReader
from gpu_operator.agents.nvml.telemetry import GpuSample, MigSample, ProcessSample

__all__ = ["sample_gpu"]

#: Per-value return codes that mean "this field does not exist here".
_ABSENT = {pynvml.NVML_ERROR_NOT_SUPPORTED, pynvml.NVML_ERROR_FUNCTION_NOT_FOUND}
#: Per-value return codes that mean the GPU is gone.
_LOST = {pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_RESET_REQUIRED}


def _field_key(field_id: int) -> str:
    return f"field:{field_id}"


def _field_values(lib: NvmlLibrary, reader: FieldReader, index: int, handle: Handle) -> dict[str, Any]:
    wanted = [f for f in FIELD_VALUES if not reader.is_unsupported(index, _field_key(f.field_id))]
    if not wanted:
        return {}
    results = reader.read(
        index, "field_values", lambda: lib.nvmlDeviceGetFieldValues(handle, [f.argument for f in wanted])
    )
    if results is None:
        return {}
    values: dict[str, Any] = {}
    for field, result in zip(wanted, results, strict=True):
        code = int(result.nvmlReturn)
        if code in _LOST:
            raise error_for_code(code)
        if code in _ABSENT:
            reader.mark_unsupported(index, _field_key(field.field_id))
        values[field.attribute] = decode_field_value(result, field.member)
    return values


def _direct(lib: NvmlLibrary, reader: FieldReader, index: int, handle: Handle) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for reading in DIRECT_READINGS:
        got = reader.read(index, reading.name, partial(reading.read, lib, handle))
        if got is not None:
            values.update({name: int(value) for name, value in got.items()})
    return values


def _mig(lib: NvmlLibrary, reader: FieldReader, index: int, mig: Sequence[MigHandle]) -> tuple[MigSample, ...]:
    return tuple(
        MigSample(
            index=m.device.index,
            uuid=m.device.uuid,
            gpu_instance_id=m.device.gpu_instance_id,
            compute_instance_id=m.device.compute_instance_id,
            memory=reader.read(index, f"mig_memory:{m.device.index}", partial(read_memory, lib, m.handle)),
        )
        for m in mig
    )


def _used_memory(value: int | None) -> int | None:
    """pynvml turns NVML's "not available" into None; the raw structure holds the sentinel itself."""
    return None if value is None or value == pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value else int(value)


def _processes(lib: NvmlLibrary, reader: FieldReader, index: int, handle: Handle) -> tuple[ProcessSample, ...]:
    running = reader.read(index, "compute_processes", lambda: lib.nvmlDeviceGetComputeRunningProcesses(handle))
    # every sample the driver still holds (timestamp 0); the latest of each process counts
    utilization = reader.read(index, "process_utilization", lambda: lib.nvmlDeviceGetProcessUtilization(handle, 0))
    latest: dict[int, tuple[int, int]] = {}
    for sample in utilization or ():
        pid, stamp = int(sample.pid), int(sample.timeStamp)
        if pid not in latest or stamp >= latest[pid][0]:
            latest[pid] = (stamp, int(sample.smUtil))
    memory = {int(p.pid): _used_memory(p.usedGpuMemory) for p in running or ()}
    return tuple(
        ProcessSample(pid, memory.get(pid), latest[pid][1] if pid in latest else None)
        for pid in sorted(memory.keys() | latest.keys())
    )


def sample_gpu(
    lib: NvmlLibrary,
    reader: FieldReader,
    gpu: tuple[int, str | None, Handle],
    mig: Sequence[MigHandle],
    timestamp: float,
    processes: bool = False,
) -> GpuSample:
    """Sample GPU (index, UUID, handle) and its MIG devices (and its processes when `processes`)."""
    index, uuid, handle = gpu
    try:
        values = _direct(lib, reader, index, handle)
        values.update(_field_values(lib, reader, index, handle))
        values["memory"] = reader.read(index, "memory", partial(read_memory, lib, handle))
        values["mig"] = _mig(lib, reader, index, mig)
        if processes:
            values["processes"] = _processes(lib, reader, index, handle)
    except NvmlGpuLost:
        return GpuSample(index=index, uuid=uuid, timestamp=timestamp, lost=True)
    return GpuSample(index=index, uuid=uuid, timestamp=timestamp, **values)
