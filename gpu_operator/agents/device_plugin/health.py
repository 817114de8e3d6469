"""Device health from NVML XID events, by NVIDIA's rules, with an opt-in recovery rule of ours.

A thread registers the GPUs with the NVML layer's event set, then waits on it. As NVIDIA's plugin does
(k8s-device-plugin internal/rm/health.go `checkHealth`): a device whose GPU NVML will not watch (its supported
event types cannot be read, or registering them fails other than with "not supported", which only means a GPU
too old for events) is `Unhealthy` from the start; an event set that cannot be created leaves health checks off
(logged). A critical XID marks the device it concerns `Unhealthy` (a MIG device when the event carries its
GPU/compute instance ids, every device of the GPU otherwise), unless the XID is one NVIDIA ignores by default
because it is an application's fault, not the GPU's (13, 31, 43, 45, 68, 109); a critical XID whose device NVML
cannot name marks every device unhealthy, and so does a failing event wait (other than its timeout). The skip
list is the fault catalog's (:data:`gpu_operator.faults.DEVICE_PLUGIN_SKIPPED_XIDS`), and the log names each XID's
class there. The two disagree on 109 (context switch timeout): the catalog says the GPU needs a reset, NVIDIA's
plugin keeps advertising the device, and so does this one; the remediation acts on 109 through the catalog.

The two variables are read as NVIDIA's plugin reads them: each is lower-cased and split at commas, and each
item, trimmed, is `all` or `xids` (the whole variable then means *all XIDs*, whatever else it lists), empty
(skipped), a decimal XID, or anything else (skipped, with a warning). `DP_DISABLE_HEALTHCHECKS` names XIDs to
ignore on top of the default ones, or all of them, which turns checking off altogether, even when
`DP_ENABLE_HEALTHCHECKS` names single XIDs. `DP_ENABLE_HEALTHCHECKS` names XIDs to check even though they are
ignored, or all of them, which ignores none (and turns checking back on after a disable-all). XID `0` stands
for *all* in both variables, as it does in NVIDIA's plugin.

Recovery: like NVIDIA's plugin, by default a device marked unhealthy stays unhealthy until the plugin restarts
(an XID may mean the GPU needs a reset, which only a person or a restart should answer). Opting in with
`--health-recovery-period` (a positive duration) marks a device healthy again once no critical XID has arrived
for it for that long *and* NVML still answers for its GPU (a GPU that fell off the bus stays unhealthy). A
device that was unhealthy from the start (lost, or not watched) never recovers: no XID can say it is quiet.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.device_plugin.devices import PluginDevice
from gpu_operator.agents.nvml import DeviceEvent, EventKind, Nvml, NvmlError
from gpu_operator.faults import DEVICE_PLUGIN_SKIPPED_XIDS, classify_xid

__all__ = [
    "DEFAULT_IGNORED_XIDS",
    "DISABLE_ENV",
    "ENABLE_ENV",
    "HealthPolicy",
    "HealthMonitor",
    "health_policy",
]

_log = logging.getLogger(__name__)

DEFAULT_IGNORED_XIDS: frozenset[int] = DEVICE_PLUGIN_SKIPPED_XIDS
DISABLE_ENV = "DP_DISABLE_HEALTHCHECKS"
ENABLE_ENV = "DP_ENABLE_HEALTHCHECKS"
#: The words that stand for every XID, and the XID number that does too.
_ALL_WORDS = frozenset({"all", "xids"})
_ALL = 0
_DECIMAL = re.compile(r"[0-9]+")
_MAX_XID = 2**64 - 1
#: How long one event wait blocks; it bounds how long stopping the monitor takes.
WAIT_MS = 200


@dataclass(frozen=True, slots=True)
class HealthPolicy:
    """Whether XIDs are checked, which are ignored, and the quiet time after which a device recovers.

    `recovery_period` 0 (the default) keeps NVIDIA's rule: an unhealthy device stays unhealthy.
    """

    enabled: bool = True
    ignored: frozenset[int] = DEFAULT_IGNORED_XIDS
    recovery_period: float = 0.0

    def critical(self, event: DeviceEvent) -> bool:
        return self.enabled and event.kind is EventKind.XID and event.data not in self.ignored


def _xid_switches(text: str, variable: str) -> dict[int, bool]:
    """The XIDs a variable names, each mapped to True; `{0: True}` when it names all of them."""
    named: dict[int, bool] = {}
    for item in (part.strip() for part in text.lower().split(",")):
        if item in _ALL_WORDS:
            return {_ALL: True}
        if not item:
            continue
        if not _DECIMAL.fullmatch(item) or int(item) > _MAX_XID:
            _log.warning("%s: ignoring %r, which is not an XID number (use a comma list of numbers, or all)",
                         variable, item)
            continue
        named[int(item)] = True
    return named


def health_policy(environ: Mapping[str, str], recovery_period: float) -> HealthPolicy:
    """The policy `DP_DISABLE_HEALTHCHECKS` and `DP_ENABLE_HEALTHCHECKS` ask for (see the module docstring)."""
    disabled = _xid_switches(environ.get(DISABLE_ENV, ""), DISABLE_ENV)
    enabled = _xid_switches(environ.get(ENABLE_ENV, ""), ENABLE_ENV)
    for xid in DEFAULT_IGNORED_XIDS:
        disabled[xid] = True
    for xid in enabled:
        disabled[xid] = False
    every = disabled.get(_ALL)
    if every is True:
        return HealthPolicy(enabled=False, ignored=DEFAULT_IGNORED_XIDS, recovery_period=recovery_period)
    ignored = frozenset() if every is False else frozenset(x for x, off in disabled.items() if off)
    return HealthPolicy(True, ignored, recovery_period)


def _xid_text(xid: int) -> str:
    """`XID 79 (fallen-off-bus)`: the XID with its class in the fault catalog."""
    return f"XID {xid} ({classify_xid(xid).name})" if xid > 0 else f"XID {xid}"


def _concerns(event: DeviceEvent, device: PluginDevice) -> bool:
    if event.uuid != device.gpu_uuid:
        return False
    if event.gpu_instance_id is None or not device.is_mig:
        return True
    return event.gpu_instance_id == device.gpu_instance_id and event.compute_instance_id in (
        None, device.compute_instance_id)


class HealthMonitor:
    """Watches events for a set of physical devices and reports health changes through `on_change`.

    `on_change(unhealthy_uuids)` is called with the full set of unhealthy physical device UUIDs whenever it
    changes. Start with `start()`, stop with `stop()` (bounded by one event wait).
    """

    def __init__(self, nvml: Nvml, devices: Iterable[PluginDevice], policy: HealthPolicy,
                 on_change: Callable[[frozenset[str]], None], *, clock: Callable[[], float] = time.monotonic,
                 initially_unhealthy: Collection[str] = ()) -> None:
        self._nvml = nvml
        self._devices: dict[str, PluginDevice] = {d.uuid: d for d in devices}
        self._policy = policy
        self._on_change = on_change
        self._clock = clock
        self._last_xid: dict[str, float | None] = {u: None for u in initially_unhealthy if u in self._devices}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="device-plugin-health", daemon=True)

    @property
    def unhealthy(self) -> frozenset[str]:
        return frozenset(self._last_xid)

    def start(self) -> None:
        if self._policy.enabled:
            _log.info("ignoring XIDs %s for health checks", sorted(self._policy.ignored) or "none")
            self._thread.start()
        else:
            _log.info("health checks disabled (%s)", DISABLE_ENV)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _mark(self, uuids: Sequence[str], why: str, *, recoverable: bool = True) -> None:
        before = self.unhealthy
        now = self._clock() if recoverable else None
        for uuid in uuids:
            self._last_xid[uuid] = now
        if self.unhealthy != before:
            _log.warning("marking unhealthy: %s (%s)", ", ".join(sorted(set(uuids) - before)), why)
            self._on_change(self.unhealthy)

    def handle(self, event: DeviceEvent) -> None:
        """Apply one event (the monitor's thread does this; tests may call it directly)."""
        if not self._policy.critical(event):
            if event.kind is EventKind.XID:
                _log.info("ignoring XID %d on %s", event.data, event.uuid)
            return
        if event.uuid is None:
            self._mark(list(self._devices), f"{_xid_text(event.data)} from a device NVML cannot name")
            return
        hit = [u for u, d in self._devices.items() if _concerns(event, d)]
        if hit:
            self._mark(hit, _xid_text(event.data))

    def watch(self) -> bool:
        """Register for events; mark the devices of GPUs NVML will not watch. False when no event set exists."""
        try:
            unwatched = self._nvml.watch_events()
        except NvmlError as error:
            _log.error("failed to start health checks: %s; continuing with health checks disabled", error)
            return False
        devices = [u for u, d in self._devices.items() if d.gpu_uuid in unwatched]
        if devices:
            why = "; ".join(f"{gpu}: {error}" for gpu, error in sorted(unwatched.items()))
            self._mark(devices, f"not watched for XIDs: {why}", recoverable=False)
        return True

    def _alive_gpus(self) -> set[str] | None:
        try:
            return {g.uuid for g in self._nvml.devices() if g.uuid is not None and not g.lost}
        except NvmlError as error:
            _log.warning("cannot check GPUs for recovery: %s", error)
            return None

    def recover(self) -> None:
        """Mark healthy the devices whose last XID is older than the recovery period and whose GPU answers."""
        period = self._policy.recovery_period
        if period <= 0 or not self._last_xid:
            return
        now = self._clock()
        due = [u for u, at in self._last_xid.items() if at is not None and now - at >= period]
        if not due:
            return
        alive = self._alive_gpus()
        if alive is None:
            return
        recovered = [u for u in due if self._devices[u].gpu_uuid in alive]
        for uuid in recovered:
            del self._last_xid[uuid]
        if recovered:
            _log.info("healthy again after %.0f s without critical XIDs: %s", period, ", ".join(recovered))
            self._on_change(self.unhealthy)

    def _run(self) -> None:
        if not self.watch():
            return
        while not self._stop.is_set():
            try:
                event = self._nvml.wait_event(WAIT_MS)
            except NvmlError as error:
                self._mark(list(self._devices), f"event wait failed: {error}")
                self._stop.wait(1.0)
                continue
            if event is not None:
                self.handle(event)
            self.recover()
