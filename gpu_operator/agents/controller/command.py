"""`gpu-operator-agent operator`: the controller that labels GPU nodes and rolls driver upgrades.

It reads its settings (the JSON the render puts in its ConfigMap), serves metrics on `--metrics-bind-address`
(`:8080`) and `/healthz` + `/readyz` on `--health-probe-bind-address` (`:8081`), takes the Lease when
`--leader-elect` (the default), then reconciles until SIGTERM. The API server is found as every client finds it:
the pod's service account in a cluster, `$KUBECONFIG` elsewhere.

Every write goes through the Lease's fence (:meth:`.leader.LeaderElector.guard`): a replica writes only while
it renewed the Lease within the renew deadline. An API server that restarts or stalls is ridden out: the client
retries, the watches list again, and a Lease renewed again by the same holder (nobody else held it meanwhile)
lets the work go on. On SIGTERM the action under way finishes, the rest are abandoned, the Lease is released
(so a standby takes over at once) and the process exits 0 within seconds. It exits 1 only when another replica
took the Lease (its pod restarts as a candidate), and 2 on bad settings, with one line naming the problem.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import start_http_server

from gpu_operator.agents.controller.leader import LEASE_NAME, LeaderElector
from gpu_operator.agents.controller.metrics import ControllerMetrics
from gpu_operator.agents.controller.settings import ControllerSettings, SettingsError, parse_settings

__all__ = ["DEFAULT_CONFIG", "build_parser", "main"]

DEFAULT_CONFIG = "/etc/gpu-operator/controller.json"
PROGRAM = "gpu-operator-agent operator"
_LOG = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Label GPU nodes and roll driver upgrades.")
    parser.add_argument("--config", default=os.environ.get("GPU_OPERATOR_CONTROLLER_CONFIG", DEFAULT_CONFIG),
                        help="the settings file (env GPU_OPERATOR_CONTROLLER_CONFIG)")
    parser.add_argument("--namespace", default=os.environ.get("OPERATOR_NAMESPACE", ""),
                        help="the operator's namespace (env OPERATOR_NAMESPACE)")
    parser.add_argument("--metrics-bind-address", default=":8080")
    parser.add_argument("--health-probe-bind-address", default=":8081")
    parser.add_argument("--leader-elect", default="true", choices=("true", "false"))
    parser.add_argument("--leader-election-id", default=LEASE_NAME)
    # controller-runtime's flags and defaults (durations as it writes them: 15s, 10s, 2s)
    parser.add_argument("--leader-elect-lease-duration", default="15s", type=_duration)
    parser.add_argument("--leader-elect-renew-deadline", default="10s", type=_duration)
    parser.add_argument("--leader-elect-retry-period", default="2s", type=_duration)
    return parser


def _duration(text: str) -> float:
    """`15s`, `1m30s`, `500ms` or plain seconds, as Go's time.ParseDuration reads the flags (h, m, s, ms)."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 15s or 1m30s")
    return sum(float(number) * units[unit] for number, unit in parts)


def _address(text: str, flag: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise SettingsError(f"{flag} {text!r} must be [host]:port")
    return host or "0.0.0.0", int(port)


class _Health(BaseHTTPRequestHandler):
    alive: threading.Event = threading.Event()
    ready: threading.Event = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        ok = {"/healthz": self.alive, "/readyz": self.ready}.get(self.path)
        code = 404 if ok is None else (200 if ok.is_set() else 503)
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok\n" if code == 200 else b"not ready\n")

    def log_message(self, format: str, *args: object) -> None:
        return


def _serve_health(address: tuple[str, int]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(address, _Health)
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server


def _settings(args: argparse.Namespace) -> ControllerSettings:
    if not args.namespace:
        raise SettingsError("the operator's namespace is unknown: set OPERATOR_NAMESPACE or --namespace")
    try:
        text = Path(args.config).read_text()
    except OSError as error:
        raise SettingsError(f"cannot read the settings file {args.config}: {error.strerror}") from None
    return parse_settings(text, args.namespace)


#: How long SIGTERM waits for the action under way before the Lease is released (a standby then takes over);
#: with the Lease call's own timeout, the process is gone within 5 s.
SHUTDOWN_SECONDS = 1.5
LEASE_CALL_SECONDS = 3.0


def _identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


def main(argv: Sequence[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per request drowns the controller's own
    args = build_parser().parse_args(list(argv))
    try:
        settings = _settings(args)
        metrics_address = _address(args.metrics_bind_address, "--metrics-bind-address")
        health_address = _address(args.health_probe_bind_address, "--health-probe-bind-address")
    except SettingsError as error:
        sys.stderr.write(f"{PROGRAM}: {error}\n")
        return 2
    from lightkube import KubeConfig  # imported after the settings parse, so bad input answers at once
    from lightkube.core.exceptions import ConfigError

    from gpu_operator.agents.controller.informer import warm_decoders
    from gpu_operator.agents.controller.loop import DECODED, ControllerLoop
    from gpu_operator.agents.kube.connect import connect
    from gpu_operator.agents.kube.transport import RetryPolicy

    stop = threading.Event()
    identity = _identity()
    try:
        config = KubeConfig.from_env().get()
        agent = f"gpu-operator-controller ({identity})"
        # a renewal may retry for up to 4 s (a throttled API server answers 429 with Retry-After: 1), so two fit in
        # the renew deadline
        lease_client = connect(config, retry=RetryPolicy(deadline=4.0), timeout=LEASE_CALL_SECONDS, interrupt=stop,
                               field_manager="gpu-operator", user_agent=agent)
        elector = None
        if args.leader_elect == "true":
            elector = LeaderElector(lease_client, settings.namespace, identity, name=args.leader_election_id,
                                    lease_seconds=args.leader_elect_lease_duration,
                                    renew_deadline=args.leader_elect_renew_deadline,
                                    retry=args.leader_elect_retry_period)
        client = connect(config, retry=RetryPolicy(deadline=15.0), timeout=10.0, interrupt=stop,
                         field_manager="gpu-operator", user_agent=agent,
                         guard=elector.guard if elector is not None else None)
    except ConfigError as error:
        sys.stderr.write(f"{PROGRAM}: no API server: {error}\n")
        return 1
    except ValueError as error:  # the leader election's timings out of client-go's order
        sys.stderr.write(f"{PROGRAM}: --leader-elect-*: {error}\n")
        return 2
    warm_decoders(DECODED)  # before the lease renewal and the watches decode in threads of their own
    metrics = ControllerMetrics()
    start_http_server(metrics_address[1], addr=metrics_address[0], registry=metrics.registry)
    health = _serve_health(health_address)
    _Health.alive.set()
    cloud = None
    if settings.remediation.cloud.provider == "azure":  # the Azure SDK loads only when a cloud acts
        from gpu_operator.agents.cloud.azure_vmss import AzureVmss

        cloud = AzureVmss()
    loop = ControllerLoop(client, settings, metrics, stop=stop, cloud=cloud)

    def on_signal(*_: object) -> None:
        stop.set()
        loop.wake.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    if elector is not None:
        threading.Thread(target=lambda: (stop.wait(), elector.stop()), daemon=True).start()
        if not elector.acquire():
            return 0
        elector.renew_in_background()
    metrics.leader.set(1)
    worker = threading.Thread(target=lambda: loop.start() and loop.run(elector.leading if elector else lambda: True),
                              name="reconcile", daemon=True)
    worker.start()
    _Health.ready.set()
    _LOG.info("reconciling GPU nodes in namespace %s as %s", settings.namespace, identity)
    lost = elector.lost if elector is not None else threading.Event()
    while not stop.wait(0.5) and not lost.is_set() and worker.is_alive():
        pass
    _LOG.info("stopping: %s", "the Lease was lost" if lost.is_set() else "asked to")
    stop.set()
    loop.wake.set()
    worker.join(timeout=SHUTDOWN_SECONDS)
    loop.close()
    health.shutdown()
    metrics.leader.set(0)
    if lost.is_set():
        sys.stderr.write(f"{PROGRAM}: another replica took the leader Lease; exiting so that this pod restarts as a "
                         "candidate\n")
        return 1
    if elector is not None and not worker.is_alive():
        elector.release()
    elif worker.is_alive():
        _LOG.warning("the action under way did not finish within %.0f s; exiting without releasing the Lease "
                     "(a standby takes over when it expires)", SHUTDOWN_SECONDS)
    return 0
