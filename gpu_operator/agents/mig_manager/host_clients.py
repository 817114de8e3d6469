"""Host GPU clients: the systemd services stopped around a MIG reconfiguration (`WITH_SHUTDOWN_HOST_GPU_CLIENTS`).

When the driver is the host's, services on the host (NVSM, host DCGM, the peer-memory service, and whatever
the clients file adds, such as `nvidia-persistenced` or `nvidia-fabricmanager`) keep the GPUs open, and NVML
refuses to destroy instances or switch MIG mode under them. NVIDIA's mig-manager stops them after the GPU
operands are paused and starts them again once the new layout is in place; so does this module, through
`systemctl` in the host's root (mounted at `/host`) and a command runner that tests replace:

* a service that is active, or failed, is stopped and remembered; one that is inactive or not installed is
  left alone (and not started afterwards: it was not running before);
* a service that will not stop is an error: the ones already stopped are started again and the
  reconfiguration fails without touching the GPUs;
* afterwards the remembered services are started in the order they were stopped, also when the change
  failed; a service that does not start is reported, after every other one was tried;
* when the MIG mode changes, the kubelet unit (`HOST_KUBELET_SYSTEMD_SERVICE`, `kubelet.service`) is stopped
  last and started last, as NVIDIA's mig-manager adds it to the clients for a mode change.

The clients file (`GPU_CLIENTS_FILE`, ConfigMap `default-gpu-clients`) is `version: v1` and `systemd-services`,
a list of unit names; without one the default list of :mod:`gpu_operator.mig.clients` applies.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from gpu_operator.agents.mig_manager.host_commands import Runner, command_runner
from gpu_operator.mig.clients import DEFAULT_GPU_CLIENTS

__all__ = ["HostClientsError", "HostGpuClients", "Runner", "load_clients"]

_log = logging.getLogger(__name__)

_CLIENTS_KEYS = ("version", "systemd-services")


class HostClientsError(RuntimeError):
    """A host service that would not stop or start, or a clients file that cannot be read."""


_run = command_runner(120)


def load_clients(path: str | None) -> tuple[str, ...]:
    """The services a clients file lists; the default list when no file is named."""
    if not path:
        return DEFAULT_GPU_CLIENTS
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise HostClientsError(f"cannot read the GPU clients file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise HostClientsError(f"GPU clients file {path}: not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise HostClientsError(f"GPU clients file {path}: expected 'version: v1' and 'systemd-services'")
    unknown = sorted(str(k) for k in document if k not in _CLIENTS_KEYS)
    if unknown:
        raise HostClientsError(f"GPU clients file {path}: unknown key(s) {', '.join(unknown)}; "
                               f"expected {', '.join(_CLIENTS_KEYS)}")
    if document.get("version") != "v1":
        raise HostClientsError(f"GPU clients file {path}: version must be v1, not {document.get('version')!r}")
    services = document.get("systemd-services") or []
    if not isinstance(services, list) or not all(isinstance(s, str) and s.strip() for s in services):
        raise HostClientsError(f"GPU clients file {path}: systemd-services must be a list of unit names")
    return tuple(dict.fromkeys(s.strip() for s in services))


@dataclass(slots=True)
class HostGpuClients:
    """Stops and restarts the host's GPU client services; `stopped` is what `restart()` will start."""

    services: tuple[str, ...]
    host_root: str = "/host"
    runner: Runner = _run
    stopped: list[str] = field(default_factory=list)

    def _systemctl(self, *arguments: str) -> tuple[int, str]:
        return self.runner(["chroot", self.host_root, "systemctl", *arguments])

    def _running(self, service: str) -> bool:
        return any(self._systemctl("-q", state, service)[0] == 0 for state in ("is-active", "is-failed"))

    def stop(self, also: Sequence[str] = ()) -> None:
        """Stop every running client, then the units in `also` (the kubelet across a MIG mode change, as NVIDIA
        does); on a failure, start the ones stopped so far again and raise."""
        for service in dict.fromkeys((*self.services, *also)):
            if not self._running(service):
                _log.info("host GPU client %s is not running; left alone", service)
                continue
            status, output = self._systemctl("stop", service)
            if status != 0:
                problem = f"cannot stop host GPU client {service} ({status}): {output or 'no output'}"
                try:
                    self.restart()
                except HostClientsError as restart_error:
                    problem += f"; {restart_error}"
                raise HostClientsError(problem)
            _log.info("stopped host GPU client %s (restarted after the MIG change)", service)
            self.stopped.append(service)

    def restart(self) -> None:
        """Start the stopped clients again, in order; raise naming every one that did not start."""
        failed: list[str] = []
        for service in self.stopped:
            status, output = self._systemctl("start", service)
            if status != 0:
                failed.append(f"{service} ({status}: {output or 'no output'})")
            else:
                _log.info("started host GPU client %s", service)
        self.stopped = []
        if failed:
            raise HostClientsError(f"host GPU clients did not start again: {', '.join(failed)}")
