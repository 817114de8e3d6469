"""`gpu-operator diag`: which layer of the GPU stack of a live cluster is broken, and what to run next.

    gpu-operator diag [--kubeconfig PATH] [--context NAME] [--namespace NS] [--selector LABELS]
                      [--stuck-after SECONDS] [--output text|json] [--save FILE]
    gpu-operator diag --from FILE [--stuck-after SECONDS] [--output text|json]

Read-only (get and list). `--save` also writes the snapshot read, `--from` judges a saved one without a cluster.
Exit status: 0 healthy, 3 degraded (the worst finding is a warning), 4 broken (an error); 2 when the cluster or
the file cannot be read (no kubeconfig, unknown context, unreachable or refusing API server, a bad snapshot file)
or the options contradict each other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

__all__ = ["add_diag_parser", "run_diag", "DEFAULT_NAMESPACE"]


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
        raise argparse.ArgumentTypeError("an empty path (an unset variable?); give a file path")
    return Path(text)


DEFAULT_NAMESPACE = "gpu-operator"


def add_diag_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    diag = commands.add_parser("diag", help="diagnose the GPU stack of a live cluster, layer by layer")
    source = diag.add_mutually_exclusive_group()
    source.add_argument("--from", dest="from_file", type=_file, metavar="FILE",
                        help="judge a snapshot saved by --save instead of reading a cluster")
    source.add_argument("--kubeconfig", type=_file, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, "
                                                       "or the in-cluster service account)")
    diag.add_argument("--context", help="kubeconfig context (default: its current context)")
    diag.add_argument("-n", "--namespace", help=f"namespace of the operands (default: {DEFAULT_NAMESPACE})")
    diag.add_argument("-l", "--selector", help="only nodes with these labels, e.g. "
                                               "kubernetes.azure.com/agentpool=h100")
    diag.add_argument("--stuck-after", type=_seconds, metavar="SECONDS",
                      help="how long an init container, a MIG change or a driver upgrade state may hold before it "
                           "counts as stuck (default: 600 for init and MIG, 1800 for upgrades)")
    diag.add_argument("-o", "--output", choices=("text", "json"), default="text", help="report format")
    diag.add_argument("--save", type=_file, metavar="FILE", help="also write the snapshot read to FILE (JSON)")
    return diag


def run_diag(args: argparse.Namespace, out: TextIO) -> int:
    from gpu_operator.config import ConfigError, Problem
    from gpu_operator.diag.diagnosis import diagnose
    from gpu_operator.diag.nodes import Thresholds
    from gpu_operator.diag.report import json_report, text_report
    from gpu_operator.diag.saved import read_snapshot, write_snapshot

    if args.from_file is not None:
        live_only = [flag for flag, value in (("--context", args.context), ("--selector", args.selector),
                                              ("--save", args.save)) if value is not None]
        if live_only:
            raise ConfigError([Problem("", f"{', '.join(live_only)} only apply when reading a cluster; a saved "
                                           "snapshot is judged as it was taken: drop them or drop --from")],
                              str(args.from_file))
        snapshot = read_snapshot(args.from_file)
        if args.namespace is not None and args.namespace != snapshot.namespace:
            raise ConfigError([Problem("namespace", f"is {snapshot.namespace!r}, but --namespace asks for "
                                                    f"{args.namespace!r}: drop --namespace or take a new snapshot")],
                              str(args.from_file))
    else:
        # imported here: judging a saved snapshot, and the other commands of the CLI, need no Kubernetes client
        from gpu_operator.diag.fetch import connect, take_snapshot

        client, server = connect(args.kubeconfig, args.context)
        snapshot = take_snapshot(client, server, args.namespace or DEFAULT_NAMESPACE, args.selector)
        if args.save is not None:
            write_snapshot(snapshot, args.save)
    thresholds = Thresholds.all(args.stuck_after) if args.stuck_after is not None else Thresholds()
    diagnosis = diagnose(snapshot, thresholds)
    out.write(json_report(diagnosis) if args.output == "json" else text_report(diagnosis))
    return diagnosis.exit_status
