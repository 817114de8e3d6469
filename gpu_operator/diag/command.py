"""`gpu-operator diag`: which layer of the GPU stack of a live cluster is broken, and what to run next.

    gpu-operator diag [--kubeconfig PATH] [--context NAME] [--namespace NS] [--selector LABELS]
                      [--stuck-after SECONDS] [--output text|json]

Read-only (get and list). Exit status: 0 healthy, 3 degraded (the worst finding is a warning), 4 broken (an error);
2 when the cluster cannot be read (no kubeconfig, unknown context, unreachable or refusing API server).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

__all__ = ["add_diag_parser", "run_diag"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give zero or more seconds")
    return value


def _file(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("an empty path (an unset variable?); give a kubeconfig path")
    return Path(text)


def add_diag_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    diag = commands.add_parser("diag", help="diagnose the GPU stack of a live cluster, layer by layer")
    diag.add_argument("--kubeconfig", type=_file, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, "
                                                       "or the in-cluster service account)")
    diag.add_argument("--context", help="kubeconfig context (default: its current context)")
    diag.add_argument("-n", "--namespace", default="gpu-operator", help="namespace of the operands")
    diag.add_argument("-l", "--selector", help="only nodes with these labels, e.g. "
                                               "kubernetes.azure.com/agentpool=h100")
    diag.add_argument("--stuck-after", type=_seconds, metavar="SECONDS",
                      help="how long an init container, a MIG change or a driver upgrade state may hold before it "
                           "counts as stuck (default: 600 for init and MIG, 1800 for upgrades)")
    diag.add_argument("-o", "--output", choices=("text", "json"), default="text", help="report format")
    return diag


def run_diag(args: argparse.Namespace, out: TextIO) -> int:
    # imported here: the other commands of the CLI need neither lightkube nor httpx
    from gpu_operator.diag.diagnosis import diagnose
    from gpu_operator.diag.fetch import connect, take_snapshot
    from gpu_operator.diag.nodes import Thresholds
    from gpu_operator.diag.report import json_report, text_report

    client, server = connect(args.kubeconfig, args.context)
    snapshot = take_snapshot(client, server, args.namespace, args.selector)
    thresholds = Thresholds.all(args.stuck_after) if args.stuck_after is not None else Thresholds()
    diagnosis = diagnose(snapshot, thresholds)
    out.write(json_report(diagnosis) if args.output == "json" else text_report(diagnosis))
    return diagnosis.exit_status
