"""`LibraryNvml`: the `Nvml` interface over an NVML library (pynvml, or the simulated library).

NVML is initialised once, when the adapter is opened, and shut down once, on close. Errors at that level
(library missing, driver not loaded, no permission) raise `NvmlUnavailable` subclasses; from then on failures
are per device or per field (see :mod:`gpu_operator.agents.nvml.reading`). The handles found by the last
`devices()` call are reused by `sample()` and by the event watch, so a metrics scrape is one sampling pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Self

from gpu_operator.agents.nvml.discovery import DiscoveredGpu, discover_gpu, text
from gpu_operator.agents.nvml.errors import NvmlError
from gpu_operator.agents.nvml.event_watch import EventWatch
from gpu_operator.agents.nvml.events import DeviceEvent
from gpu_operator.agents.nvml.inventory import GpuInfo, SystemInfo
from gpu_operator.agents.nvml.library import NvmlLibrary
from gpu_operator.agents.nvml.pci import PciBus
from gpu_operator.agents.nvml.reading import FieldReader, call, optional
from gpu_operator.agents.nvml.sampling import sample_gpu
from gpu_operator.agents.nvml.telemetry import GpuSample

__all__ = ["LibraryNvml"]


class LibraryNvml:
    """A node's GPUs read through an `NvmlLibrary`. Use :meth:`open`; thread-safe."""

    def __init__(
        self,
        lib: NvmlLibrary,
        pci: PciBus,
        *,
        clock: Callable[[], float] = time.time,
        source: str = "nvml",
    ) -> None:
        self._lib = lib
        self._pci = pci
        self._clock = clock
        self._reader = FieldReader()
        self._events = EventWatch(lib)
        self._discovered: tuple[DiscoveredGpu, ...] | None = None
        self._lock = threading.RLock()
        self._open = False
        self.source = source

    @classmethod
    def open(
        cls, lib: NvmlLibrary, pci: PciBus, *, clock: Callable[[], float] = time.time, source: str = "nvml"
    ) -> LibraryNvml:
        """Initialise NVML (once) and return the adapter. Raises `NvmlUnavailable` subclasses."""
        adapter = cls(lib, pci, clock=clock, source=source)
        call(lambda: lib.nvmlInitWithFlags(0))
        adapter._open = True
        return adapter

    @property
    def pci(self) -> PciBus:
        return self._pci

    def system(self) -> SystemInfo:
        lib = self._lib
        driver = optional(lib.nvmlSystemGetDriverVersion)
        nvml_version = optional(lib.nvmlSystemGetNVMLVersion)
        cuda = optional(lib.nvmlSystemGetCudaDriverVersion)
        return SystemInfo(
            driver_version=None if driver is None else text(driver),
            cuda_driver_version=None if cuda is None else int(cuda),
            nvml_version=None if nvml_version is None else text(nvml_version),
            device_count=int(call(lib.nvmlDeviceGetCount)),
        )

    def devices(self) -> tuple[GpuInfo, ...]:
        with self._lock:
            self._reader.forget()
            count = int(call(self._lib.nvmlDeviceGetCount))
            self._discovered = tuple(discover_gpu(self._lib, self._reader, self._pci, i) for i in range(count))
            return tuple(d.info for d in self._discovered)

    def _known(self) -> tuple[DiscoveredGpu, ...]:
        if self._discovered is None:
            self.devices()
        assert self._discovered is not None
        return self._discovered

    def sample(self, processes: bool = False) -> tuple[GpuSample, ...]:
        with self._lock:
            now = self._clock()
            samples = []
            for gpu in self._known():
                info = gpu.info
                if info.lost or gpu.handle is None:
                    samples.append(GpuSample(index=info.index, uuid=info.uuid, timestamp=now, lost=True))
                else:
                    samples.append(
                        sample_gpu(self._lib, self._reader, (info.index, info.uuid, gpu.handle), gpu.mig, now,
                                   processes)
                    )
            return tuple(samples)

    def _watched(self) -> tuple[DiscoveredGpu, ...]:
        known = self._known()
        if not self._events.registered:
            self._events.register([(g.info.index, g.handle) for g in known if g.handle is not None and not g.info.lost])
        return known

    def watch_events(self) -> dict[str, NvmlError]:
        with self._lock:
            known = self._watched()
            unwatched = self._events.unwatched
            return {g.info.uuid: unwatched[g.info.index] for g in known
                    if g.info.uuid is not None and g.info.index in unwatched}

    def wait_event(self, timeout_ms: int) -> DeviceEvent | None:
        with self._lock:
            known = self._watched()
            index_by_uuid = {g.info.uuid: g.info.index for g in known if g.info.uuid is not None}
        return self._events.wait(timeout_ms, index_by_uuid)

    def close(self) -> None:
        with self._lock:
            self._events.close()
            if self._open:
                self._open = False
                optional(self._lib.nvmlShutdown)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
