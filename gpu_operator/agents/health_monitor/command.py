"""`gpu-operator-agent health-monitor`: the node's GPU health as Node conditions and Events, and its host actions.

Two roles from one command, as the DaemonSet runs them in two containers:

* the monitor (the default): NVML (real or `--nvml fake:<profile>`, with run-time faults from the file
  `GPU_OPERATOR_NVML_FAULTS` names) and the API server, unprivileged; it resets GPUs and reboots the node through
  the helper at `--host-actions-socket`, or on a simulated node in process;
* the helper (`--serve-host-actions`): privileged, serving that socket (:mod:`.host_server`).

Settings: :mod:`.settings`. SIGTERM, SIGINT and SIGQUIT stop either role; a bad setting exits 2 with its reason.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gpu_operator.agents.health_monitor.host_actions import HostOps, SimulatedHost, SocketHost
from gpu_operator.agents.health_monitor.host_server import HostActionServer, host_actions
from gpu_operator.agents.health_monitor.monitor import HealthMonitor
from gpu_operator.agents.kubelet.pod_resources import PodResourcesClient
from gpu_operator.agents.health_monitor.settings import Settings, SettingsError, resolve_settings
from gpu_operator.agents.kube import KubeClient, KubeError
from gpu_operator.agents.nvml import Nvml, open_nvml
from gpu_operator.agents.nvml.underlying import library_of
from gpu_operator.agents.signals import STOP, SignalQueue, SignalSource

__all__ = ["PROGRAM", "main"]

PROGRAM = "gpu-operator-agent health-monitor"
_log = logging.getLogger(__name__)


def _host_factory(settings: Settings, client: KubeClient) -> Callable[[Nvml | None], HostOps | None]:
    """How the monitor reaches the host: the helper's socket, the simulated node, or nothing."""

    def host(nvml: Nvml | None) -> HostOps | None:
        if settings.simulated:
            library = library_of(nvml) if nvml is not None else None
            return None if library is None else SimulatedHost(library, client, settings.node)
        return SocketHost(settings.host_actions_socket) if settings.host_actions_socket else None

    return host


def _serve(settings: Settings, signals: SignalSource) -> int:
    Path(settings.host_actions_socket).parent.mkdir(parents=True, exist_ok=True)
    validations = settings.validations_dir
    server = HostActionServer(settings.host_actions_socket, lambda: host_actions(validations))
    thread = threading.Thread(target=server.serve_forever, name="host-actions", daemon=True)
    thread.start()
    _log.info("serving host actions on %s", settings.host_actions_socket)
    while signals.wait(None) not in STOP:
        pass
    server.shutdown()
    server.server_close()
    return 0


def _monitor(settings: Settings, env: Mapping[str, str], client: KubeClient, signals: SignalSource) -> int:
    pod_resources = PodResourcesClient(settings.pod_resources_socket) if settings.pod_resources_socket else None
    monitor = HealthMonitor(settings, client, lambda: open_nvml(settings.nvml, environ=env),
                            _host_factory(settings, client), pod_resources=pod_resources)
    stopped = threading.Event()
    worker = threading.Thread(target=lambda: (monitor.start(), monitor.run(stopped)), name="health-monitor",
                              daemon=True)
    worker.start()
    while signals.wait(None) not in STOP:
        pass
    stopped.set()
    worker.join(timeout=5)
    monitor.stop()
    return 0


def _run(settings: Settings, env: Mapping[str, str], kube: KubeClient | None, signals: SignalSource) -> int:
    if settings.serve_host_actions:
        return _serve(settings, signals)
    try:
        client = kube or KubeClient.from_environment(env)
    except KubeError as error:
        sys.stderr.write(f"{PROGRAM}: cannot reach the Kubernetes API: {error}\n")
        return 2
    return _monitor(settings, env, client, signals)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None, *,
         kube: KubeClient | None = None, signals: SignalSource | None = None) -> int:
    """Run the monitor (or the helper); `kube` and `signals` replace the API client and the process's signals
    in tests."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    env = dict(os.environ if environ is None else environ)
    try:
        settings = resolve_settings(list(sys.argv[1:] if argv is None else argv), env, PROGRAM)
    except SettingsError as error:
        sys.stderr.write(f"{PROGRAM}: {error}\n")
        return 2
    if signals is not None:
        return _run(settings, env, kube, signals)
    with SignalQueue() as queue:
        return _run(settings, env, kube, queue)
