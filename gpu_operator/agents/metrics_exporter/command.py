"""`gpu-operator-agent metrics-exporter`: dcgm-exporter's command line over NVML.

Wires the real world into the exporter: NVML (`--nvml`, `--fail-on-init-error`), the collectors file, the XID
event watch, GPM, the kubelet's pod-resources socket and the API server (for pod UIDs and labels), the HTTP
server on `--address`, and the signals: SIGHUP rebuilds the collector (collectors file and inventory re-read),
SIGTERM/SIGINT/SIGQUIT stop. Start-up failures (NVML missing, a bad flag, an unreadable collectors file, a
busy port) end the process with one line on stderr and status 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpu_operator.agents.exposition import (
    ExpositionServer,
    ListenAddress,
    SnapshotHolder,
    health_route,
    landing_route,
    metrics_route,
)
from gpu_operator.agents.kubelet import PodResourcesClient, PodResourcesError
from gpu_operator.agents.metrics_exporter.collector import (
    Attribution,
    Collector,
    Sources,
)
from gpu_operator.agents.metrics_exporter.counters import (
    Counter,
    CountersError,
    load_counters,
)
from gpu_operator.agents.metrics_exporter.entities import IdentityOptions
from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES, Needs
from gpu_operator.agents.metrics_exporter.loop import CollectionLoop
from gpu_operator.agents.metrics_exporter.pod_metadata import ApiPods, LabelRules
from gpu_operator.agents.metrics_exporter.settings import (
    Settings,
    SettingsError,
    add_arguments,
    resolve_settings,
)
from gpu_operator.agents.metrics_exporter.variants import PodLabelling
from gpu_operator.agents.metrics_exporter.xid import XidTracker, XidWatch
from gpu_operator.agents.nvml import Nvml, NvmlError, open_nvml
from gpu_operator.agents.nvml.gpm import GpmTarget, GpmWatch
from gpu_operator.agents.nvml.licensing import LicenseReader
from gpu_operator.agents.nvml.underlying import library_of
from gpu_operator.agents.signals import RELOAD, SignalQueue, SignalSource

__all__ = [
    "NAME",
    "Built",
    "Exporter",
    "ExporterFailure",
    "build_parser",
    "main",
    "needs",
    "serve_until_stopped",
    "start",
]

_log = logging.getLogger(__name__)

NAME = "metrics-exporter"
PROGRAM = f"gpu-operator-agent {NAME}"


class ExporterFailure(Exception):
    """A start-up failure; its message is the one line printed before exiting."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Export GPU metrics for Prometheus (dcgm-exporter).")
    add_arguments(parser)
    return parser


def needs(counters: Sequence[Counter]) -> frozenset[Needs]:
    """What the collected fields need besides sampling (XID events, GPM, licensing)."""
    return frozenset(FIELD_SOURCES[c.name].needs for c in counters if c.name in FIELD_SOURCES)


def _hostname(settings: Settings) -> str | None:
    return None if settings.no_hostname else settings.node_name or socket.gethostname()


def _open_nvml(settings: Settings) -> Nvml:
    try:
        return open_nvml(settings.nvml, fail_on_init_error=settings.fail_on_init_error)
    except NvmlError as error:
        raise ExporterFailure(f"NVML is not available: {error}") from error
    except ValueError as error:
        raise ExporterFailure(str(error)) from error


def _counters(settings: Settings) -> tuple[Counter, ...]:
    try:
        return load_counters(settings.collectors)
    except CountersError as error:
        raise ExporterFailure(str(error)) from error


def _pod_sources(settings: Settings, environ: Mapping[str, str]) -> tuple[PodResourcesClient | None, ApiPods | None]:
    if not settings.kubernetes:
        return None, None
    try:
        pods = PodResourcesClient(settings.pod_resources_socket)
    except PodResourcesError as error:
        raise ExporterFailure(str(error)) from error
    if not (settings.pod_uid or settings.pod_labels or settings.virtual_gpus):
        return pods, None
    # loaded only here: lightkube and httpx2 add ~6 MiB to an exporter that never asks the API server
    from gpu_operator.agents.kube import KubeClient, KubeConfigError

    try:
        return pods, ApiPods(KubeClient.from_environment(environ), settings.node_name)
    except KubeConfigError as error:
        _log.warning("pod UIDs and labels (and per-pod shares of shared GPUs) will not be available: %s", error)
        return pods, None


@dataclass(frozen=True, slots=True)
class Built:
    """What one (re)build produces: the collector, how to release it, and what its fields need."""

    collector: Collector
    close: Callable[[], None]
    wanted: frozenset[Needs]


@dataclass
class Exporter:
    """The running exporter: what serves, what collects, and what must be closed."""

    settings: Settings
    nvml: Nvml
    holder: SnapshotHolder
    server: ExpositionServer
    build: Callable[[], Built]
    xids: XidTracker = field(default_factory=XidTracker)
    loop: CollectionLoop | None = None
    built: Built | None = None
    xid_watch: XidWatch | None = None

    @property
    def collector(self) -> Collector | None:
        return None if self.built is None else self.built.collector

    def run_collection(self) -> None:
        """(Re)build the collector and collect on the interval; watch XIDs once a field needs them (and GPUs exist)."""
        built = self.build()
        if self.loop is not None:
            self.loop.stop()
        if self.built is not None:
            self.built.close()
        self.built = built
        if Needs.XID in built.wanted and built.collector.entities and self.xid_watch is None:
            self.xid_watch = XidWatch(self.nvml, self.xids)
            self.xid_watch.start()
        self.loop = CollectionLoop(built.collector.collect, self.holder, self.settings.collect_interval_ms / 1000)
        self.loop.start()

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()
        if self.built is not None:
            self.built.close()
        if self.xid_watch is not None:
            self.xid_watch.stop()
        self.server.stop()
        self.nvml.close()


def _builder(settings: Settings, nvml: Nvml, environ: Mapping[str, str], xids: XidTracker) -> Callable[[], Built]:
    pods, pod_metadata = _pod_sources(settings, environ)
    identity = IdentityOptions(_hostname(settings), settings.use_old_namespace, settings.replace_blanks,
                               settings.gpu_id_type)
    labelling = PodLabelling(settings.use_old_namespace, settings.pod_uid, settings.pod_labels,
                             LabelRules.from_patterns(settings.pod_label_allowlist))
    attribution = Attribution(settings.kubernetes, settings.virtual_gpus, settings.resource_names, labelling,
                              settings.hpc_job_dir or None, settings.proc_root)
    library = library_of(nvml)

    def build() -> Built:
        counters = _counters(settings)
        wanted = needs(counters)
        licenses = LicenseReader(library).status if library is not None and Needs.LICENSE in wanted else None
        sources = Sources(nvml, pods, pod_metadata, xids if Needs.XID in wanted else None, None, licenses)
        collector = Collector(sources, counters, identity, attribution)
        if library is None or Needs.GPM not in wanted:
            return Built(collector, lambda: None, wanted)
        targets = tuple(GpmTarget(e.index, e.gpu_instance_id) for e in collector.entities)
        sources.gpm = gpm = GpmWatch(library, targets)
        return Built(collector, gpm.close, wanted)

    return build


def start(settings: Settings, environ: Mapping[str, str]) -> Exporter:
    """Open NVML, bind the port, start collecting (and watching XIDs). Raises ExporterFailure."""
    nvml = _open_nvml(settings)
    holder = SnapshotHolder()
    routes = {
        "/metrics": metrics_route(holder),
        "/health": health_route(holder),
        "/": landing_route("GPU Exporter", {"Metrics": "./metrics", "Health": "./health"}),
    }
    try:
        server = ExpositionServer(settings.address, routes)
    except OSError as error:
        nvml.close()
        raise ExporterFailure(f"cannot listen on {settings.address}: {error}") from error
    xids = XidTracker()
    exporter: Exporter | None = None
    try:
        exporter = Exporter(settings, nvml, holder, server, _builder(settings, nvml, environ, xids), xids)
        exporter.run_collection()
    except ExporterFailure:
        if exporter is not None:
            exporter.stop()
        else:
            server.stop()
            nvml.close()
        raise
    server.start()
    where = ListenAddress(settings.address.host, server.port)
    _log.info("serving GPU metrics on %s (collect interval %d ms)", where, settings.collect_interval_ms)
    return exporter


def serve_until_stopped(exporter: Exporter, signals: SignalSource) -> None:
    """Block until a stop signal; SIGHUP rebuilds the collector (a failed rebuild keeps the running one)."""
    while True:
        received = signals.wait(None)
        if received != RELOAD:
            return
        _log.info("SIGHUP: re-reading the collectors file and the GPU inventory")
        try:
            exporter.run_collection()
        except ExporterFailure as error:
            _log.error("reload failed, still collecting as before: %s", error)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the exporter until a stop signal; returns the exit status."""
    arguments = vars(build_parser().parse_args(argv))
    env = os.environ if environ is None else environ
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = resolve_settings(arguments, env)
        with SignalQueue() as signals:
            exporter = start(settings, env)
            try:
                serve_until_stopped(exporter, signals)
            finally:
                exporter.stop()
    except (SettingsError, ExporterFailure) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    return 0
