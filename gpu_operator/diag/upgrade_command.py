"""`gpu-operator upgrade status`: the driver rollout of a live cluster, per stage and pool, read-only.

    gpu-operator upgrade status [--kubeconfig PATH] [--context NAME] [-n NS] [-o text|json] [--watch [--interval S]]

Nodes by upgrade state per stage and pool, the failed ones with their reason, what the rollout waits on (the
active stage, a soak), a halt's reason, and an estimate of the time left from the observed per-node time.
`--watch` prints the report again every `--interval` seconds until the rollout is finished (or Ctrl-C); with
`-o json` each report is one line of JSON. Exit status: 0, or 3 when the rollout is halted or a node failed; 2
when the cluster cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TextIO

from gpu_operator.diag.command import DEFAULT_NAMESPACE

__all__ = ["EXIT_HALTED", "add_upgrade_parser", "run_upgrade"]

EXIT_HALTED = 3


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to 3600 seconds")
    return value


def add_upgrade_parser(commands: argparse._SubParsersAction, path: Callable[[str], object]  # type: ignore[type-arg]
                       ) -> argparse.ArgumentParser:
    upgrade = commands.add_parser("upgrade", help="the driver rollout of a live cluster")
    actions = upgrade.add_subparsers(dest="upgrade_command", required=True, metavar="{status}")
    status = actions.add_parser("status", help="nodes by upgrade state per stage and pool, a halt, the time left "
                                               "(read-only)")
    status.add_argument("--kubeconfig", type=path, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, "
                                                        "or the in-cluster service account)")
    status.add_argument("--context", help="kubeconfig context (default: its current context)")
    status.add_argument("-n", "--namespace", default=DEFAULT_NAMESPACE,
                        help=f"namespace of the operands (default: {DEFAULT_NAMESPACE})")
    status.add_argument("-o", "--output", choices=("text", "json"), default="text", help="report format")
    status.add_argument("-w", "--watch", action="store_true",
                        help="print the report again every --interval seconds until the rollout is finished")
    status.add_argument("--interval", type=_interval, default=10.0, metavar="SECONDS",
                        help="seconds between two reports with --watch (default: 10)")
    return upgrade


def run_upgrade(args: argparse.Namespace, out: TextIO, live: TextIO | None = None,
                sleep: Callable[[float], None] = time.sleep) -> int:
    """`upgrade status`; with --watch the reports go to `live` (standard output) as they come."""
    from gpu_operator.diag.fetch import connect
    from gpu_operator.diag.upgrade_status import format_progress, read_upgrade, upgrade_progress

    client, server = connect(args.kubeconfig, args.context)
    sink = out if not args.watch else (live or sys.stdout)
    while True:
        report = upgrade_progress(read_upgrade(client, server, args.namespace))
        text = json.dumps(report.to_dict(), sort_keys=True) + "\n" if args.output == "json" else \
            format_progress(report)
        if args.watch and args.output == "text":
            text = f"--- {time.strftime('%H:%M:%S')}\n{text}"
        sink.write(text)
        sink.flush()
        if not args.watch or report.finished:
            return EXIT_HALTED if report.halted or report.failed else 0
        try:
            sleep(args.interval)
        except KeyboardInterrupt:
            return 0
