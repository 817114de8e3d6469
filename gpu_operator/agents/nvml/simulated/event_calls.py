"""Simulated event calls: event sets, registration, and XID faults delivered once.

A GPU registers for the event types it supports (XID critical errors, double- and single-bit ECC). Each XID
fault of the profile, and each XID injected at run time, is handed out by exactly one `nvmlEventSetWait` on a set
its GPU registered with; a wait with nothing to deliver fails with "timeout" after its timeout, like NVML's, and
returns early with an XID injected meanwhile (the node's fault file is read every few milliseconds). An
`unidentified` fault comes with a device handle that no call accepts.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pynvml

from gpu_operator.agents.nvml.events import NO_INSTANCE
from gpu_operator.agents.nvml.simulated.core import SimulatedCore, fail
from gpu_operator.agents.nvml.simulated.profile import (
    XidFault,
)
from gpu_operator.agents.nvml.simulated.records import (
    EventRecord,
    EventSetHandle,
    GpuHandle,
)

__all__ = ["EventCalls"]

_EVENT_TYPES = (
    pynvml.nvmlEventTypeXidCriticalError | pynvml.nvmlEventTypeDoubleBitEccError | pynvml.nvmlEventTypeSingleBitEccError
)
#: How often a waiting event set looks at the node's fault file.
_FILE_POLL_SECONDS = 0.005


class EventCalls(SimulatedCore):
    """nvmlEventSetCreate/Wait/Free, nvmlDeviceGetSupportedEventTypes, nvmlDeviceRegisterEvents."""

    # -- events ---------------------------------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> EventSetHandle:
        self._enter("nvmlEventSetCreate")
        return EventSetHandle()

    def nvmlDeviceGetSupportedEventTypes(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetSupportedEventTypes")
        return _EVENT_TYPES

    def nvmlDeviceRegisterEvents(self, handle: Any, event_types: int, event_set: Any) -> None:
        index, _, _ = self._gpu(handle, "nvmlDeviceRegisterEvents")
        if event_types & ~_EVENT_TYPES:
            fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        event_set.registered[index] = event_set.registered.get(index, 0) | event_types

    def _deliverable(self, event_set: EventSetHandle) -> XidFault | None:
        with self._lock:
            for fault in list(self._pending):
                if event_set.registered.get(fault.gpu, 0) & pynvml.nvmlEventTypeXidCriticalError:
                    self._pending.remove(fault)
                    return fault
        return None

    def _idle(self, seconds: float) -> None:
        """Wait for `seconds`, or (without a test's `sleep`) until a fault is injected."""
        if self._sleep is not None:
            self._sleep(seconds)
            return
        self._woken.wait(seconds)
        self._woken.clear()

    def _wait_for_fault(self, event_set: EventSetHandle, timeout_s: float) -> XidFault | None:
        step = min(timeout_s, _FILE_POLL_SECONDS) if self._faults_file is not None else timeout_s
        steps = max(1, math.ceil(timeout_s / step)) if step > 0 else 1
        deadline = time.monotonic() + timeout_s
        for _ in range(steps):
            fault = self._deliverable(event_set)
            if fault is not None:
                return fault
            remaining = deadline - time.monotonic()
            if self._sleep is None and remaining <= 0:
                break
            self._idle(step if self._sleep is not None else min(step, remaining))
            self._refresh()
        return self._deliverable(event_set)

    def nvmlEventSetWait(self, event_set: Any, timeout_ms: int) -> EventRecord:
        self._enter("nvmlEventSetWait")
        if not isinstance(event_set, EventSetHandle) or event_set.freed:
            fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        fault = self._wait_for_fault(event_set, timeout_ms / 1000)
        if fault is None:
            fail(pynvml.NVML_ERROR_TIMEOUT)
        return EventRecord(
            device=None if fault.unidentified else GpuHandle(fault.gpu),
            eventType=pynvml.nvmlEventTypeXidCriticalError,
            eventData=fault.xid,
            gpuInstanceId=NO_INSTANCE if fault.gpu_instance is None else fault.gpu_instance,
            computeInstanceId=NO_INSTANCE if fault.compute_instance is None else fault.compute_instance,
        )

    def nvmlEventSetFree(self, event_set: Any) -> None:
        self._enter("nvmlEventSetFree")
        event_set.freed = True
