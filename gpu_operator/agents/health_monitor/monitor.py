"""The health monitor: NVML events and health passes in, Node conditions and Events out, requests acted on.

Four threads share one fault book (:mod:`.book`):

* the event thread waits on NVML's event set (the NVML layer's event watch): an XID becomes a latched finding
  and an Event at once; an XID of the `application` or `informational` class (13, 31, 43, 45 on their own, ...)
  makes an Event only, never a condition;
* the main thread runs a health pass every `--health-interval-seconds` (:mod:`.readings`), once the driver has
  been validated and the grace period is over (:mod:`.bootstrap`); it opens NVML again when NVML fails, and
  reports a driver that stays unusable; it acts on the controller's requests (:mod:`.actions`);
* the watch thread keeps the monitor's copy of its Node (:mod:`.node_view`) and wakes the main thread when a
  request arrives;
* the publisher writes the conditions and Events (:mod:`.publisher`, :mod:`.events`).

Start, and start over after a simulated reboot: the Node's `status.nodeInfo.bootID` is compared with the boot the
conditions were written in (annotation `nvidia.com/gpu-remediation.conditions-boot-id`). The same boot: the
monitor adopts what its conditions show (it restarted; nothing is written again). A new boot: every finding of the
old boot is gone (a reboot clears XIDs, and volatile counters start at 0), the conditions are written `False`,
and only then is the new boot recorded, so a monitor stopped in between clears them again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from gpu_operator.agents.health_monitor.actions import RequestHandler
from gpu_operator.agents.health_monitor.book import FaultBook
from gpu_operator.agents.health_monitor.bootstrap import Bootstrap, standing_aside, upgrading
from gpu_operator.agents.health_monitor.events import EventRecorder
from gpu_operator.agents.health_monitor.findings import Finding, GpuRef, level_finding, xid_finding
from gpu_operator.agents.health_monitor.holders import HOLDERS_ANNOTATION, gpu_holders, holders_annotation
from gpu_operator.agents.health_monitor.host_actions import HostOps
from gpu_operator.agents.health_monitor.node_view import NodeView
from gpu_operator.agents.health_monitor.publisher import ConditionPublisher
from gpu_operator.agents.health_monitor.ratelimit import TokenBucket
from gpu_operator.agents.health_monitor.readings import HealthAssessor, gpu_ref, name_gpus
from gpu_operator.agents.health_monitor.settings import Settings
from gpu_operator.agents.kube import NODES, Gone, KubeClient, KubeError
from gpu_operator.agents.kubelet.pod_resources import PodResourcesError, PodResourcesSource
from gpu_operator.agents.nvml import (
    DeviceEvent,
    EventKind,
    GpuInfo,
    Nvml,
    NvmlDriverNotLoaded,
    NvmlError,
    NvmlLibraryNotFound,
    PciBus,
)
from gpu_operator.agents.nvml.health import GpuHealth, HealthReader
from gpu_operator.agents.nvml.underlying import library_of
from gpu_operator.faults import health_fault

__all__ = ["BOOT_ANNOTATION", "HealthMonitor"]

_log = logging.getLogger(__name__)

BOOT_ANNOTATION = "nvidia.com/gpu-remediation.conditions-boot-id"
#: How long one NVML event wait blocks (it bounds how long releasing NVML takes), as the device plugin's.
_WAIT_MS = 200
_WATCH_SECONDS = 300
_BACKOFF_START, _BACKOFF_MAX = 0.5, 8.0


def _event_type(finding: Finding) -> str:
    return "Warning" if finding.fault_class.condition else "Normal"


class HealthMonitor:
    """One node's monitor. `open_nvml()` opens NVML (again, after a failure or a reset); `host(nvml)` gives the
    host actions for the NVML open now (None: this node neither resets nor reboots)."""

    def __init__(self, settings: Settings, client: KubeClient, open_nvml: Callable[[], Nvml],
                 host: Callable[[Nvml | None], HostOps | None], *, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 pod_resources: PodResourcesSource | None = None) -> None:
        self.settings = settings
        self._pod_resources = pod_resources
        """The kubelet's pod-resources answer, for the pods holding the faulty GPUs (:mod:`.holders`)."""
        self._client, self._open_nvml, self._host = client, open_nvml, host
        self._clock, self._monotonic = clock, monotonic
        self._node = settings.node
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pass_now = threading.Event()
        self.view = NodeView(on_change=lambda node: self._wake.set())
        self.book = FaultBook()
        self._assessor = HealthAssessor(settings.thresholds)
        self._bootstrap = self._new_bootstrap()
        self.events = EventRecorder(client, self._node, TokenBucket(settings.event_qps, settings.event_burst),
                                    interval=settings.event_interval, clock=clock, monotonic=monotonic)
        self.publisher = ConditionPublisher(
            client, self._node, self.book, self.view, TokenBucket(settings.condition_qps, settings.condition_burst),
            self.events, heartbeat=settings.heartbeat, batch_seconds=settings.batch_seconds, clock=clock,
            monotonic=monotonic)
        self.events.on_record = self.publisher.wake
        self.requests = RequestHandler(client, self._node, self.view, self, lambda: self._host(self._nvml),
                                       idle_timeout=settings.reset_idle_timeout, idle_poll=settings.idle_poll)
        self._nvml_lock = threading.RLock()
        self._wait_over = threading.Condition(self._nvml_lock)
        self._in_wait = False
        self._nvml: Nvml | None = None
        self._nvml_error: NvmlError | None = None
        self._reader: HealthReader | None = None
        self._aside: str | None = None
        self._rebooting = False
        self._inventory: dict[str, GpuInfo] = {}
        #: Each GPU's name as last seen answering, by NVML index (a lost GPU answers nothing).
        self._names: dict[int, GpuRef] = {}
        self._threads: list[threading.Thread] = []

    def _new_bootstrap(self) -> Bootstrap:
        return Bootstrap(self.settings.validations_dir or None, self.settings.startup_grace, clock=self._clock)

    # -- life cycle ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start over, then the event, watch and publisher threads."""
        self.start_over()
        for target, name in ((self._watch_events, "events"), (self._watch_node, "node-watch")):
            thread = threading.Thread(target=target, name=f"health-monitor-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self.publisher.start()

    def run(self, until: threading.Event | None = None) -> None:
        """Health passes and requests until `stop()` (or `until` is set)."""
        next_pass = self._monotonic()
        while not self._stop.is_set() and not (until is not None and until.is_set()):
            self._step_aside_if_paused()
            if self._monotonic() >= next_pass or self._pass_now.is_set():
                self._pass_now.clear()
                self.health_pass()
                next_pass = self._monotonic() + self.settings.health_interval
            self.requests.handle()
            self._wake.wait(max(0.0, min(next_pass - self._monotonic(), 1.0)))
            self._wake.clear()

    def rebooting(self) -> None:
        """The host is going down: NVML closed and nothing read until the process ends with it."""
        with self._nvml_lock:
            self._rebooting = True
            self._aside = "the node is rebooting"
            self._close()

    def _step_aside_if_paused(self) -> None:
        """Let go of NVML while the operands are paused for a driver or MIG change (:mod:`.bootstrap`)."""
        aside = standing_aside(self.view.labels())
        if aside == self._aside or self._rebooting:
            return
        with self._nvml_lock:
            self._aside = aside
            if aside is not None:
                _log.info("node %s: %s: NVML closed until the operands are back", self._node, aside)
                self._close()
            else:
                _log.info("node %s: the operands are back: NVML opened again", self._node)

    def stop(self) -> None:
        """Stop the threads (the node watch ends with its stream; it writes nothing) and close NVML."""
        self._stop.set()
        self._wake.set()
        self.publisher.stop()
        for thread in self._threads:
            if thread.name != "health-monitor-node-watch":
                thread.join(timeout=5)
        with self._nvml_lock:
            self._close()

    def start_over(self) -> None:
        """Read the Node, settle the boot (see the module docstring), open NVML and write the conditions."""
        node = self._read_node()
        self.view.offer(node)
        self.events.node_uid(self.view.uid())
        boot, recorded = self.view.boot_id(), self.view.annotations().get(BOOT_ANNOTATION, "")
        self._bootstrap = self._new_bootstrap()
        self._assessor = HealthAssessor(self.settings.thresholds)
        if boot and boot == recorded:
            self.book.adopt(self.view.conditions())
        else:
            _log.info("node %s: boot %s (conditions were written in %s): clearing the last boot's faults",
                      self._node, boot or "unknown", recorded or "none")
            self.book.clear()
        with self._nvml_lock:
            self._close()
            self._aside = standing_aside(self.view.labels())
            if self._aside is None:
                self._open()
        with contextlib.suppress(NvmlError):
            self.gpus()
        while not self.publisher.sync(bypass_bucket=True) and not self._stop.wait(1.0):
            pass
        if boot and boot != recorded:
            with contextlib.suppress(KubeError):
                self.view.offer(self._client.patch(NODES, self._node, {"metadata": {"annotations": {
                    BOOT_ANNOTATION: boot}}}))

    def _read_node(self) -> dict:
        delay = _BACKOFF_START
        while True:
            try:
                return self._client.get(NODES, self._node)
            except KubeError as error:
                _log.warning("node %s cannot be read (%s); trying again in %.1f s", self._node, error, delay)
                if self._stop.wait(delay):
                    raise
                delay = min(delay * 2, _BACKOFF_MAX)

    # -- NVML ---------------------------------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            nvml = self._open_nvml()
            unwatched = nvml.watch_events()
        except NvmlError as error:
            if self._nvml_error is None or str(error) != str(self._nvml_error):
                _log.warning("NVML cannot be used: %s", error)
            self._nvml, self._nvml_error, self._reader = None, error, None
            return
        for uuid, why in sorted(unwatched.items()):
            _log.warning("GPU %s: no XID events from NVML (%s)", uuid, why)
        library = library_of(nvml)
        self._nvml, self._nvml_error = nvml, None
        self._reader = None if library is None else HealthReader(library)

    def _close(self) -> None:
        """Close NVML (with the lock held), once the event thread is out of its wait on it."""
        nvml, self._nvml, self._reader = self._nvml, None, None
        while self._in_wait:
            self._wait_over.wait()
        if nvml is not None:
            with contextlib.suppress(NvmlError):
                nvml.close()

    @contextlib.contextmanager
    def nvml_released(self) -> Iterator[None]:
        """NVML closed for the duration (a GPU reset waits for every NVML client), then opened again."""
        with self._nvml_lock:
            self._close()
            try:
                yield
            finally:
                self._open()

    def _current(self) -> Nvml:
        with self._nvml_lock:
            if self._aside is not None:
                raise NvmlError(f"NVML is closed while the GPU operands are paused ({self._aside})")
            if self._nvml is None:
                self._open()
            if self._nvml is None:
                raise self._nvml_error or NvmlError("NVML is not open")
            return self._nvml

    def gpus(self) -> Sequence[GpuInfo]:
        gpus = self._current().devices()
        self._inventory = {g.uuid: g for g in gpus if g.uuid}
        self._names.update({g.index: gpu_ref(g) for g in gpus if not g.lost and g.uuid})
        return gpus

    def processes(self, indices: Sequence[int]) -> Mapping[int, Sequence[int]]:
        wanted = set(indices)
        return {s.index: [p.pid for p in s.processes] for s in self._current().sample(processes=True)
                if s.index in wanted}

    def _health(self, gpus: Sequence[GpuInfo]) -> dict[int, GpuHealth | None]:
        readings: dict[int, GpuHealth | None] = {}
        for gpu in gpus:
            if gpu.lost or self._reader is None:
                continue
            try:
                readings[gpu.index] = self._reader.read(gpu.index)
            except NvmlError as error:
                _log.debug("GPU %s: health fields unreadable this pass: %s", gpu.uuid, error)
                readings[gpu.index] = None
        return readings

    # -- health passes ------------------------------------------------------------------------------------------

    def _driver_finding(self, error: NvmlError) -> Finding:
        name = "DriverNotLoaded" if isinstance(error, NvmlDriverNotLoaded | NvmlLibraryNotFound) else "NVMLInitFailed"
        return level_finding(health_fault(name), None, f"NVML: {error}")

    def health_pass(self) -> None:
        """Read and judge every GPU once; the book's level findings follow when readings count."""
        if self._aside is not None:
            return
        settled = self._bootstrap.settled()
        findings: list[Finding] | None = None
        lost = None if upgrading(self.view.labels()) else self._bootstrap.validation_lost()
        if lost is not None:
            findings = [level_finding(health_fault("ValidatorFailed"), None, lost)]
        read: Sequence[GpuInfo] | None = None
        try:
            gpus = read = self.gpus()
            readings = self._health(gpus)
            pci = self._current().pci
        except NvmlError as error:
            with self._nvml_lock:
                self._close()
                self._nvml_error = error
            if settled and findings is None:
                findings = [self._driver_finding(error)]
        else:
            if settled and findings is None:
                names, missing = self._named(gpus, pci)
                findings = self._assessor.assess(gpus, readings, self._monotonic(), names) + missing
        if findings is None:
            return
        for finding in self.book.set_levels(findings):
            self.events.record(_event_type(finding), finding.reason, finding.entry)
        self.publisher.wake()
        if read is not None:
            self.publish_holders(read)

    def publish_holders(self, gpus: Sequence[GpuInfo]) -> None:
        """Write which pods hold the GPUs a quarantining fault names (:mod:`.holders`), when it changed; nothing
        without a kubelet to ask."""
        if self._pod_resources is None:
            return
        faulty = {f.gpu.uuid for f in self.book.findings()
                  if f.gpu is not None and f.gpu.uuid and f.fault_class.quarantine}
        try:
            allocations = self._pod_resources.list_devices() if faulty else ()
        except PodResourcesError as error:
            _log.warning("node %s: the pods holding the faulty GPUs are unknown (%s)", self._node, error)
            return
        if allocations is None:
            return  # no kubelet socket: the controller drains every GPU pod of the node
        wanted = holders_annotation(gpu_holders(allocations, gpus), faulty)
        if self.view.annotations().get(HOLDERS_ANNOTATION) == wanted:
            return
        try:
            self.view.offer(self._client.patch(NODES, self._node, {"metadata": {"annotations": {
                HOLDERS_ANNOTATION: wanted}}}))
        except KubeError as error:
            _log.warning("node %s: %s not written (%s); again at the next pass", self._node, HOLDERS_ANNOTATION, error)

    def _named(self, gpus: Sequence[GpuInfo], pci: PciBus) -> tuple[dict[int, GpuRef], list[Finding]]:
        try:
            functions = pci.nvidia_functions()
        except OSError as error:
            _log.debug("the PCI bus cannot be scanned: %s", error)
            functions = ()
        return name_gpus(gpus, self._names, functions)

    def recheck(self, gpus: Sequence[GpuInfo]) -> list[Finding]:
        """After a reset: the quarantining faults these GPUs still show."""
        uuids = [g.uuid for g in gpus if g.uuid]
        self._assessor.forget(uuids)
        found = self._assessor.assess(gpus, self._health(gpus), self._monotonic(), self._names)
        return [f for f in found if f.fault_class.quarantine]

    def reset_done(self, uuids: Sequence[str], request_id: str) -> None:
        for finding in self.book.clear_gpus(uuids):
            _log.info("node %s: %s cleared by the GPU reset %s", self._node, finding.entry, request_id)
        for uuid in uuids:
            gpu = self._inventory.get(uuid)
            ref = gpu_ref(gpu) if gpu is not None else GpuRef(uuid, None)
            self.events.record("Normal", "GPUReset", f"{ref}: reset (request {request_id})")
        self.health_pass()
        self.publisher.wake()

    # -- events -------------------------------------------------------------------------------------------------

    def handle_event(self, event: DeviceEvent) -> None:
        """One NVML event: an XID becomes a finding and an Event; a double-bit ECC event calls a health pass."""
        if event.kind is EventKind.DOUBLE_BIT_ECC:
            self._pass_now.set()
            self._wake.set()
            return
        if event.kind is not EventKind.XID:
            return
        gpu = self._inventory.get(event.uuid or "")
        ref = gpu_ref(gpu) if gpu is not None else GpuRef(event.uuid, None)
        recovery = self._recovery_action(event) if event.data == 154 else None
        finding = xid_finding(event.data, ref, recovery, self.settings.xid_overrides)
        if finding is None:
            return  # the config ignores this XID
        if finding.fault_class.condition and self.book.add(finding):
            self.publisher.wake()
        self.events.record(_event_type(finding), finding.reason, finding.entry)

    def _recovery_action(self, event: DeviceEvent) -> int | None:
        reader = self._reader
        if reader is None or event.index is None:
            return None
        try:
            return reader.read(event.index).recovery_action
        except NvmlError:
            return None

    def _wait_event(self) -> tuple[Nvml | None, DeviceEvent | NvmlError | None]:
        """One wait on the NVML open now (none: nothing to wait on); NVML is not closed under a wait."""
        with self._nvml_lock:
            nvml = self._nvml
            self._in_wait = nvml is not None
        if nvml is None:
            return None, None
        try:
            return nvml, nvml.wait_event(_WAIT_MS)
        except NvmlError as error:
            return nvml, error
        finally:
            with self._nvml_lock:
                self._in_wait = False
                self._wait_over.notify_all()

    def poll_event(self) -> bool:
        """Wait once for an NVML event and handle it; False when there was nothing to wait on (NVML closed or
        failing: the caller pauses before the next wait)."""
        nvml, event = self._wait_event()
        if isinstance(event, NvmlError):
            _log.warning("NVML event wait failed (%s): NVML is opened again", event)
            with self._nvml_lock:
                if self._nvml is nvml:
                    self._close()
                    self._nvml_error = event
            return False
        if event is not None:
            self.handle_event(event)
        return nvml is not None

    def _watch_events(self) -> None:
        while not self._stop.is_set():
            if not self.poll_event():
                self._stop.wait(_WAIT_MS / 1000)

    # -- the Node -----------------------------------------------------------------------------------------------

    def _watch_node(self) -> None:
        delay = _BACKOFF_START
        while not self._stop.is_set():
            try:
                for _, node in self._client.watch(NODES, fields={"metadata.name": self._node},
                                                  timeout_seconds=_WATCH_SECONDS):
                    self.view.offer(node)
                    delay = _BACKOFF_START
                    if self._stop.is_set():
                        return
            except Gone:
                continue
            except KubeError as error:
                _log.warning("watch of node %s broke (%s); again in %.1f s", self._node, error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
