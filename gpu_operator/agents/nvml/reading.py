"""Reading one field of one GPU without letting one failure spoil the rest.

The rule for every per-device NVML call:

* success -> the value;
* "not supported" (or a function the driver lacks) -> None, and the (GPU, field) pair is remembered so later
  passes skip the call entirely - a metrics scrape stays cheap on GPUs that lack half the fields;
* the GPU is lost (or needs a reset) -> `NvmlGpuLost` propagates, so the caller marks that GPU lost and moves
  on to the next one;
* anything else (no permission for one field, a transient error) -> None for this pass only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import pynvml

from gpu_operator.agents.nvml.errors import (
    NvmlError,
    NvmlGpuLost,
    NvmlNotSupported,
    translate,
)

__all__ = ["FieldReader", "call", "optional"]

_log = logging.getLogger(__name__)
T = TypeVar("T")


def call(function: Callable[[], T]) -> T:
    """Run one NVML call, raising our exception type instead of pynvml's."""
    try:
        return function()
    except pynvml.NVMLError as error:
        raise translate(error) from None


def optional(function: Callable[[], T]) -> T | None:
    """One NVML call whose failure only means "unknown": None, except that a lost GPU still propagates."""
    try:
        return call(function)
    except NvmlGpuLost:
        raise
    except NvmlError as error:
        _log.debug("NVML value unavailable: %s", error)
        return None


class FieldReader:
    """Optional reads with the rule above; `unsupported` is shared across passes until the inventory changes."""

    def __init__(self) -> None:
        self._unsupported: set[tuple[int, str]] = set()

    def forget(self) -> None:
        """Start over (after a MIG reconfiguration a field may have come or gone)."""
        self._unsupported.clear()

    def is_unsupported(self, index: int, field: str) -> bool:
        return (index, field) in self._unsupported

    def mark_unsupported(self, index: int, field: str) -> None:
        self._unsupported.add((index, field))

    def read(self, index: int, field: str, function: Callable[[], T]) -> T | None:
        if (index, field) in self._unsupported:
            return None
        try:
            return call(function)
        except NvmlGpuLost:
            raise
        except NvmlNotSupported:
            self._unsupported.add((index, field))
            return None
        except NvmlError as error:
            _log.debug("GPU %d: %s unavailable this pass: %s", index, field, error)
            return None
