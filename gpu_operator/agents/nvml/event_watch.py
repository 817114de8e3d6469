"""Waiting for XID and ECC events on all GPUs of the node.

On first use an NVML event set is created and every GPU registers the event types the NVML layer watches
(XID critical errors, double- and single-bit ECC errors), masked with the types that GPU supports. A GPU that
cannot register is skipped with a warning, as the device plugin does. A wait that times out is not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

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

    @property
    def registered(self) -> bool:
        return self._set is not None

    def register(self, gpus: Sequence[tuple[int, Handle]]) -> None:
        lib = self._lib
        event_set = call(lib.nvmlEventSetCreate)
        for index, handle in gpus:
            try:
                mask = WATCHED_EVENT_TYPES & int(
                    call(lambda handle=handle: lib.nvmlDeviceGetSupportedEventTypes(handle))
                )
                if mask:
                    call(lambda handle=handle, mask=mask: lib.nvmlDeviceRegisterEvents(handle, mask, event_set))
            except NvmlError as error:
                _log.warning("GPU %d: not watching XID/ECC events: %s", index, error)
        self._set = event_set

    def wait(self, timeout_ms: int, index_by_uuid: Mapping[str, int]) -> DeviceEvent | None:
        """The next event, or None after `timeout_ms`. Other failures raise (callers treat all GPUs as suspect)."""
        if self._set is None:
            raise NvmlError("event set not registered")
        event_set = self._set
        try:
            data = call(lambda: self._lib.nvmlEventSetWait(event_set, timeout_ms))
        except NvmlTimeout:
            return None
        raw_uuid = optional(lambda: self._lib.nvmlDeviceGetUUID(data.device))
        uuid = None if raw_uuid is None else text(raw_uuid)
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
