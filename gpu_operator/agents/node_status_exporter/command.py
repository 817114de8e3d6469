"""`gpu-operator-agent node-status-exporter`: the validator's metrics mode (`COMPONENT=metrics`).

Serves `gpu_operator_node_*` gauges on `/metrics` (port `METRICS_PORT`, 8000 in the operator's DaemonSet) and
an always-OK `/health`, with the probes of :mod:`.probes` running in the background. The device-plugin probe
needs the API server (the agents' Kubernetes client: the pod's service account, or `$KUBECONFIG`); without one it
is not started and its gauges stay 0, as in the validator. The
process runs until SIGTERM/SIGINT/SIGQUIT (SIGHUP is ignored); start-up failures print one line and exit 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gpu_operator.agents.exposition import (
    HEALTHY,
    ExpositionServer,
    ListenAddress,
    Snapshot,
    SnapshotHolder,
    health_route,
    landing_route,
    metrics_route,
)
from gpu_operator.agents.kube import KubeClient, KubeConfigError
from gpu_operator.agents.node_status_exporter.driver_check import (
    DriverCheck,
    NvidiaSmiCheck,
)
from gpu_operator.agents.node_status_exporter.node_capacity import ApiNode
from gpu_operator.agents.node_status_exporter.node_state import NodeState
from gpu_operator.agents.node_status_exporter.pci_count import (
    PciCounter,
    default_counter,
)
from gpu_operator.agents.node_status_exporter.probes import (
    Probe,
    ProbeRunner,
    device_plugin_probe,
    driver_probe,
    pci_probe,
    status_files_probe,
)
from gpu_operator.agents.node_status_exporter.settings import (
    Settings,
    SettingsError,
    add_arguments,
    resolve_settings,
)
from gpu_operator.agents.node_status_exporter.simulated_node import (
    SimulatedDriverCheck,
    SimulatedPciCounter,
    is_simulated,
)
from gpu_operator.agents.signals import RELOAD, SignalQueue, SignalSource

__all__ = ["NAME", "NodeStatusExporter", "build_parser", "main", "probes_for", "start"]

_log = logging.getLogger(__name__)

NAME = "node-status-exporter"
PROGRAM = f"gpu-operator-agent {NAME}"


class StartFailure(Exception):
    """A start-up failure; its message is the one line printed before exiting."""


def build_parser() -> argparse.ArgumentParser:
    description = "Export the GPU stack's node status (the validator's metrics mode)."
    parser = argparse.ArgumentParser(prog=PROGRAM, description=description)
    add_arguments(parser)
    return parser


def probes_for(settings: Settings, environ: Mapping[str, str], clock: Callable[[], float]) -> list[Probe]:
    """The probes of this node (or of the simulated node `--nvml` names); device plugin only inside a cluster."""
    check: DriverCheck = NvidiaSmiCheck(settings.host_root, settings.driver_root, settings.skip_gpu_init)
    counter: PciCounter = default_counter(settings.sysfs_root)
    if settings.nvml is not None and is_simulated(settings.nvml):
        check, counter = SimulatedDriverCheck(settings.nvml), SimulatedPciCounter(settings.nvml)
    probes = [
        status_files_probe(settings.output_dir, settings.status_interval),
        driver_probe(check, clock, settings.driver_interval),
        pci_probe(counter, settings.pci_interval),
    ]
    try:
        client = KubeClient.from_environment(environ)
    except KubeConfigError as error:
        _log.error("device plugin devices will not be counted: %s", error)
        return probes
    probes.insert(2, device_plugin_probe(ApiNode(client, settings.node_name), clock, settings.plugin_interval))
    return probes


@dataclass
class NodeStatusExporter:
    state: NodeState
    server: ExpositionServer
    runner: ProbeRunner

    def stop(self) -> None:
        self.runner.stop()
        self.server.stop()


def start(settings: Settings, environ: Mapping[str, str], clock: Callable[[], float] = time.time) -> NodeStatusExporter:
    """Bind the port, publish the initial gauges and start the probes. Raises StartFailure."""
    holder = SnapshotHolder(Snapshot(b"", HEALTHY))
    state = NodeState(settings.node_name, holder, clock())
    routes = {
        "/metrics": metrics_route(holder),
        "/health": health_route(holder),
        "/": landing_route("GPU Operator node status", {"Metrics": "./metrics"}),
    }
    try:
        server = ExpositionServer(settings.listen, routes)
    except OSError as error:
        raise StartFailure(f"cannot listen on {settings.listen}: {error}") from error
    runner = ProbeRunner(state, probes_for(settings, environ, clock))
    runner.start()
    server.start()
    where = ListenAddress(settings.listen.host, server.port)
    _log.info("running the metrics server, listening on %s/metrics", where)
    return NodeStatusExporter(state, server, runner)


def wait_for_stop(signals: SignalSource) -> None:
    while signals.wait(None) == RELOAD:
        _log.info("SIGHUP ignored: nothing to reload")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    arguments = vars(build_parser().parse_args(argv))
    env = os.environ if environ is None else environ
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = resolve_settings(arguments, env)
        with SignalQueue() as signals:
            exporter = start(settings, env)
            try:
                wait_for_stop(signals)
            finally:
                exporter.stop()
    except (SettingsError, StartFailure) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    return 0
