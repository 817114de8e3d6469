"""The plugin set of a node: every resource's server, the health monitor, and the kubelet's comings and goings.

`PluginManager.start()` builds the resources from the NVML inventory, writes the CDI specs of the devices a CDI
device list strategy names (:mod:`.cdi_spec`), waits until the MPS control daemon of every MPS-shared resource
answers (:mod:`.mps`; nothing is served or registered before), starts one server per resource,
registers each with the kubelet and starts the health monitor. Nothing is left running when start fails: the
servers already started are stopped again. A watcher thread notices when `kubelet.sock` is recreated (the
kubelet restarted and forgot its plugins): it restarts every server and registers again, as NVIDIA's plugin
does on the inotify create event. A registration that failed (no kubelet yet) is retried when the socket
appears or changes, and every 30 seconds; so is a restart whose MPS daemons do not answer (they are asked once
per restart, as NVIDIA's plugin asks them on every start).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping

from gpu_operator.agents.device_plugin.cdi_spec import write_specs
from gpu_operator.agents.device_plugin.devices import Resource, build_resources
from gpu_operator.agents.device_plugin.health import HealthMonitor, health_policy
from gpu_operator.agents.device_plugin.mps import POLL_SECONDS, WAIT_SECONDS, MpsDaemon, find_control, wait_for_daemon
from gpu_operator.agents.device_plugin.server import RegistrationError, ResourceServer
from gpu_operator.agents.device_plugin.settings import DEFAULT_KUBELET_SOCKET, Settings
from gpu_operator.agents.nvml import Nvml
from gpu_operator.agents.plugin_config import SharingStrategy

__all__ = ["PluginManager", "RETRY_SECONDS"]

_log = logging.getLogger(__name__)

RETRY_SECONDS = 30.0
_POLL_SECONDS = 0.1


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_ctime_ns


class PluginManager:
    """Runs the plugins of one settings generation; `stop()` ends everything it started (bounded in time)."""

    def __init__(self, settings: Settings, nvml: Nvml, environ: Mapping[str, str], *,
                 retry_seconds: float = RETRY_SECONDS, clock: Callable[[], float] = time.monotonic,
                 mps_wait_seconds: float = WAIT_SECONDS, mps_poll_seconds: float = POLL_SECONDS) -> None:
        self.settings = settings
        self._nvml = nvml
        self._environ = environ
        self._mps_wait = mps_wait_seconds
        self._mps_poll = mps_poll_seconds
        self._policy = health_policy(environ, settings.health_recovery_period)
        self._retry = retry_seconds
        self._clock = clock
        # with registration off ("" socket) the plugin sockets still go to the kubelet's default directory
        self._directory = os.path.abspath(os.path.dirname(settings.kubelet_socket or DEFAULT_KUBELET_SOCKET))
        self.resources: tuple[Resource, ...] = ()
        self.cdi_specs: dict[str, str] = {}
        self.servers: list[ResourceServer] = []
        self._monitor: HealthMonitor | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._registered = False
        self._last_attempt = 0.0
        self.registrations = 0

    def start(self) -> None:
        """Build, wait for MPS daemons, serve, register, watch.

        Raises DeviceError, OSError or RuntimeError (MpsDaemonError among them) with nothing left running.
        """
        gpus = self._nvml.devices()
        self.resources = build_resources(gpus, self.settings)
        self.cdi_specs = write_specs(self.resources, self.settings)
        self._wait_for_mps(self._mps_wait)
        lost = frozenset(g.uuid for g in gpus if g.lost and g.uuid is not None)
        devices = [d for r in self.resources for d in r.devices]
        try:
            self._start_servers(lost)
            self._monitor = HealthMonitor(self._nvml, devices, self._policy, self._health_changed,
                                          initially_unhealthy=lost)
            self._monitor.start()
        except BaseException:
            self.stop()
            raise
        self._register_all()
        if self.settings.kubelet_socket:
            self._watcher = threading.Thread(target=self._watch, name="device-plugin-kubelet-watch", daemon=True)
            self._watcher.start()

    def _wait_for_mps(self, timeout: float) -> None:
        """Return once every MPS-shared resource's control daemon answers; MpsDaemonError after `timeout`."""
        daemons = [MpsDaemon(r.name, self.settings.mps_root_ctr_path)
                   for r in self.resources if r.sharing is SharingStrategy.MPS]
        if not daemons:
            return
        control = find_control(self._environ, self.settings.driver_root_ctr_path)
        for daemon in daemons:
            wait_for_daemon(daemon, control, timeout=timeout, poll=self._mps_poll, stop=self._stop)

    def _start_servers(self, unhealthy: frozenset[str]) -> None:
        os.makedirs(self._directory, exist_ok=True)
        for resource in self.resources:
            server = ResourceServer(resource, self.settings, self._directory, unhealthy)
            server.start()
            self.servers.append(server)

    def _health_changed(self, unhealthy: frozenset[str]) -> None:
        with self._lock:
            for server in self.servers:
                server.set_unhealthy(unhealthy)

    def _register_all(self) -> None:
        if not self.settings.kubelet_socket:
            return
        self._last_attempt = self._clock()
        try:
            for server in self.servers:
                server.register(self.settings.kubelet_socket)
        except RegistrationError as error:
            self._registered = False
            _log.warning("%s; retrying when kubelet.sock changes or in %.0f s", error, self._retry)
            return
        self._registered = True
        self.registrations += 1

    def _restart(self) -> None:
        """Fresh servers on fresh sockets (the kubelet dropped its connections), then register again."""
        with self._lock:
            unhealthy = frozenset() if self._monitor is None else self._monitor.unhealthy
            for server in self.servers:
                server.stop()
            self.servers = []
            try:
                self._wait_for_mps(0)
                self._start_servers(unhealthy)
            except (OSError, RuntimeError) as error:
                _log.error("restarting the plugin servers failed: %s; retrying in %.0f s", error, self._retry)
                self._registered = False
                self._last_attempt = self._clock()
                return
        self._register_all()

    def _watch(self) -> None:
        socket = self.settings.kubelet_socket
        seen = _identity(socket)
        while not self._stop.wait(_POLL_SECONDS):
            now = _identity(socket)
            if now != seen:
                seen = now
                if now is not None:
                    _log.info("%s was recreated: restarting and registering again", socket)
                    self._restart()
                continue
            if not self._registered and now is not None and self._clock() - self._last_attempt >= self._retry:
                self._restart()

    def stop(self) -> None:
        self._stop.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=10)
        if self._monitor is not None:
            self._monitor.stop()
        with self._lock:
            for server in self.servers:
                server.stop()
            self.servers = []
