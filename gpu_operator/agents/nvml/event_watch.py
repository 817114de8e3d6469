"""Waiting for XID and ECC events on all GPUs of the node.

On first use an NVML event set is created and every GPU registers the event types the NVML layer watches
(XID critical errors, double- and single-bit ECC errors), masked with the types that GPU supports. A GPU that
answers "not supported" to the registration is too old for events and is skipped with a warning; a GPU whose
supported types cannot be read, or whose registration fails otherwise, is skipped and kept in `unwatched` with
the error, which NVIDIA's device plugin takes as an unhealthy device (k8s-device-plugin internal/rm/health.go
`checkHealth`). A wait that times out is not an error; an event whose device NVML cannot name has no UUID.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import pynvml

from gpu_operator.agents.nvml.discovery import text
from gpu_operator.agents.nvml.errors import NvmlError, NvmlTimeout
from gpu_operator.agents.nvml.events import (
    NO_INSTANCE,
    WATCHED_EVENT_TYPES,
    DeviceEvent,
    event_kind,
)
from gpu_operator.agents.nvml.library import Handle, NvmlLibrary
from gpu_operator.agents.nvml.reading import call, optional

__all__ = ["EventWatch"]

_log = logging.getLogger(__name__)


def _instance(value: int) -> int | None:
    return None if value == NO_INSTANCE else value


class EventWatch:
    """An event set over a fixed list of GPU handles."""

    def __init__(self, lib: NvmlLibrary) -> None:
        self._lib = lib
        self._set: Handle | None = None
        #: GPU index -> why it is not watched (too old for events is not a reason: such a GPU is not here).
        self.unwatched: dict[int, NvmlError] = {}

    @property
    def registered(self) -> bool:
        return self._set is not None

    def register(self, gpus: Sequence[tuple[int, Handle]]) -> None:
        event_set = self._set = call(self._lib.nvmlEventSetCreate)
        for index, handle in gpus:
            try:
                self._register_gpu(handle, event_set)
            except NvmlError as error:
                _log.warning("GPU %d: not watching XID/ECC events: %s", index, error)
                self.unwatched[index] = error

    def _register_gpu(self, handle: Handle, event_set: Handle) -> None:
        lib = self._lib
        mask = WATCHED_EVENT_TYPES & int(call(lambda: lib.nvmlDeviceGetSupportedEventTypes(handle)))
        if not mask:
            return
        try:
            call(lambda: lib.nvmlDeviceRegisterEvents(handle, mask, event_set))
        except NvmlError as error:
            if error.code != pynvml.NVML_ERROR_NOT_SUPPORTED:
                raise
            _log.warning("a GPU too old for XID/ECC events is not watched: %s", error)

    def wait(self, timeout_ms: int, index_by_uuid: Mapping[str, int]) -> DeviceEvent | None:
        """The next event, or None after `timeout_ms`. Other failures raise (callers treat all GPUs as suspect)."""
        if self._set is None:
            raise NvmlError("event set not registered")
        event_set = self._set
        try:
            data = call(lambda: self._lib.nvmlEventSetWait(event_set, timeout_ms))
        except NvmlTimeout:
            return None
        try:
            uuid: str | None = text(call(lambda: self._lib.nvmlDeviceGetUUID(data.device)))
        except NvmlError as error:
            _log.warning("cannot tell which GPU event type %d came from: %s", int(data.eventType), error)
            uuid = None
        return DeviceEvent(
            kind=event_kind(int(data.eventType)),
            event_type=int(data.eventType),
            data=int(data.eventData),
            uuid=uuid,
            index=None if uuid is None else index_by_uuid.get(uuid),
            gpu_instance_id=_instance(int(data.gpuInstanceId)),
            compute_instance_id=_instance(int(data.computeInstanceId)),
        )

    def close(self) -> None:
        if self._set is not None:
            event_set, self._set = self._set, None
            optional(lambda: self._lib.nvmlEventSetFree(event_set))
