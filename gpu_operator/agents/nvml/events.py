"""GPU events: XID errors and ECC errors that NVML delivers through an event set.

An XID is the driver's number for a GPU fault (79: fallen off the bus, 48: double-bit ECC, ...). The device
plugin marks devices unhealthy on critical XIDs; the metrics exporter reports the last XID per GPU. Events of a
MIG device carry its GPU and compute instance ids; whole-GPU events carry none.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pynvml

__all__ = ["EventKind", "DeviceEvent", "WATCHED_EVENT_TYPES", "NO_INSTANCE", "event_kind"]


class EventKind(Enum):
    """What an event is about."""

    XID = "xid"
    DOUBLE_BIT_ECC = "double-bit-ecc"
    SINGLE_BIT_ECC = "single-bit-ecc"
    OTHER = "other"


#: NVML event type bit -> kind. The device plugin registers exactly these three.
_KIND_BY_TYPE: dict[int, EventKind] = {
    pynvml.nvmlEventTypeXidCriticalError: EventKind.XID,
    pynvml.nvmlEventTypeDoubleBitEccError: EventKind.DOUBLE_BIT_ECC,
    pynvml.nvmlEventTypeSingleBitEccError: EventKind.SINGLE_BIT_ECC,
}

#: The event types the NVML layer registers for on every GPU (masked by what each GPU supports).
WATCHED_EVENT_TYPES: int = (
    pynvml.nvmlEventTypeXidCriticalError | pynvml.nvmlEventTypeDoubleBitEccError | pynvml.nvmlEventTypeSingleBitEccError
)

#: The GPU/compute instance id NVML puts in events that concern the whole GPU.
NO_INSTANCE = 0xFFFFFFFF


def event_kind(event_type: int) -> EventKind:
    return _KIND_BY_TYPE.get(event_type, EventKind.OTHER)


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """One event. `data` is the XID number for XID events. Instance ids are `None` for whole-GPU events."""

    kind: EventKind
    event_type: int
    data: int
    uuid: str | None
    index: int | None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None
