"""Device health from NVML XID events, NVIDIA's rules plus a recovery rule of ours.

A thread waits on the NVML layer's event set. A critical XID marks the device it concerns `Unhealthy` (a MIG
device when the event carries its GPU/compute instance ids, every device of the GPU otherwise), unless the XID
is one NVIDIA ignores by default because it is an application's fault, not the GPU's (13, 31, 43, 45, 68,
109). `DP_DISABLE_HEALTHCHECKS` is `all` or `xids` (no checking at all) or a comma list of more XIDs to
ignore; `DP_ENABLE_HEALTHCHECKS` is `all` (ignore none) or a comma list of default-ignored XIDs to check
again. A failing event wait (other than its timeout) marks every device unhealthy, as NVIDIA's plugin does.

Recovery: NVIDIA's plugin never marks a device healthy again; a single transient XID takes the GPU out of
scheduling until someone restarts the plugin. We mark a device healthy again once no critical XID has
arrived for it for `--health-recovery-period` (default 5 minutes) *and* NVML still answers for its GPU (a GPU
that fell off the bus stays unhealthy). Period 0 keeps NVIDIA's behaviour. Why: the XIDs that persist
(double-bit ECC, a GPU that needs a reset) keep arriving while the fault lasts, and a lost GPU is caught by
the NVML check, while one-off XIDs should not cost a GPU until a human notices.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.device_plugin.devices import PluginDevice
from gpu_operator.agents.nvml import DeviceEvent, EventKind, Nvml, NvmlError

__all__ = [
    "DEFAULT_IGNORED_XIDS",
    "DISABLE_ENV",
    "ENABLE_ENV",
    "HealthPolicy",
    "HealthMonitor",
    "health_policy",
]

_log = logging.getLogger(__name__)

DEFAULT_IGNORED_XIDS: frozenset[int] = frozenset({13, 31, 43, 45, 68, 109})
DISABLE_ENV = "DP_DISABLE_HEALTHCHECKS"
ENABLE_ENV = "DP_ENABLE_HEALTHCHECKS"
_DISABLE_ALL = frozenset({"all", "xids"})
#: How long one event wait blocks; it bounds how long stopping the monitor takes.
WAIT_MS = 200


@dataclass(frozen=True, slots=True)
class HealthPolicy:
    """Whether XIDs are checked, which are ignored, and the quiet time after which a device recovers (0: never)."""

    enabled: bool = True
    ignored: frozenset[int] = DEFAULT_IGNORED_XIDS
    recovery_period: float = 300.0

    def critical(self, event: DeviceEvent) -> bool:
        return self.enabled and event.kind is EventKind.XID and event.data not in self.ignored


def _xids(text: str, variable: str) -> set[int]:
    values = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if not item.isdigit():
            raise ValueError(f"{variable}={text!r}: {item!r} is not an XID number (use a comma list of numbers"
                             f"{' or all' if variable == ENABLE_ENV else ', all or xids'})")
        values.add(int(item))
    return values


def health_policy(environ: Mapping[str, str], recovery_period: float) -> HealthPolicy:
    """The policy the two variables ask for. Raises ValueError naming the variable for a bad value."""
    disabled = environ.get(DISABLE_ENV, "").strip().lower()
    enabled = environ.get(ENABLE_ENV, "").strip().lower()
    if disabled in _DISABLE_ALL:
        return HealthPolicy(enabled=False, ignored=DEFAULT_IGNORED_XIDS, recovery_period=recovery_period)
    ignored = set(DEFAULT_IGNORED_XIDS) | _xids(disabled, DISABLE_ENV)
    ignored = set() if enabled == "all" else ignored - _xids(enabled, ENABLE_ENV)
    return HealthPolicy(True, frozenset(ignored), recovery_period)


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
            self._thread.start()
        else:
            _log.info("health checks disabled (%s)", DISABLE_ENV)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _mark(self, uuids: Sequence[str], why: str) -> None:
        before = self.unhealthy
        now = self._clock()
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
        hit = [u for u, d in self._devices.items() if _concerns(event, d)]
        if hit:
            self._mark(hit, f"XID {event.data}")

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
