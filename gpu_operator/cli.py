"""`gpu-operator`: render manifests and import Helm values from the command line, no cluster needed.

    gpu-operator render [-f CONFIG] [-o DIR] [--summary]   manifests in apply order (stdout: multi-document YAML)
    gpu-operator import-values FILE [-n NAMESPACE]          Helm values or a ClusterPolicy manifest → our config

Without `-f`, `render` uses the built-in default stack. A bad config prints every problem and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from collections.abc import Sequence

from gpu_operator.config import ConfigError, load_config
from gpu_operator.manifests import dump_all_yaml, dump_yaml, format_table, summary_rows, write_directory

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-operator", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser("render", help="render the stack's Kubernetes objects")
    render.add_argument("-f", "--file", type=Path, help="config document (default: the built-in default stack)")
    render.add_argument("-o", "--output", type=Path, help="directory for one file per object (default: stdout)")
    render.add_argument("--summary", action="store_true", help="print a table of operands, DaemonSets and images")

    values = commands.add_parser(
        "import-values", help="convert GPU Operator Helm values (or a ClusterPolicy manifest) to a config document"
    )
    values.add_argument("values", type=Path, help="a gpu-operator values.yaml, or a ClusterPolicy manifest")
    values.add_argument("-n", "--namespace", default="gpu-operator", help="namespace of the operands")
    return parser


def _render(args: argparse.Namespace) -> int:
    from gpu_operator.render import render_operands
    from gpu_operator.render.nfd import nfd_chart

    config = load_config(args.file)
    operands = render_operands(config)
    objects = [obj for operand in operands for obj in operand.objects]
    if args.output is not None:
        paths = write_directory(objects, args.output)
        print(f"wrote {len(paths)} objects to {args.output}/", file=sys.stderr if not args.summary else sys.stdout)
    elif not args.summary:
        sys.stdout.write(dump_all_yaml(objects))
    if args.summary:
        print(format_table(("STATE", "OBJECTS", "DAEMONSETS", "IMAGES"), summary_rows(operands)))
        print(f"{len(objects)} objects, {sum(o['kind'] == 'DaemonSet' for o in objects)} DaemonSets, "
              f"namespace {config.namespace}")
        chart = nfd_chart(config)
        if chart is not None:
            print(f"plus Helm chart {chart.chart} {chart.version} (Node Feature Discovery, installed by GpuOperator)")
    return 0


def _import_values(args: argparse.Namespace) -> int:
    from gpu_operator.config.importers import ignored_helm_values, load_import
    from gpu_operator.config.importers.loader import is_manifest
    from gpu_operator.config.loader import read_yaml_mapping

    document = load_import(args.values, namespace=args.namespace)
    sys.stdout.write(dump_yaml(document))
    source = read_yaml_mapping(args.values)
    if not is_manifest(source):
        for key, reason in ignored_helm_values(source).items():
            print(f"note: {key} not imported: {reason}", file=sys.stderr)
    return 0


_COMMANDS = {"render": _render, "import-values": _import_values}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except FileNotFoundError as error:
        print(f"error: {error.filename}: no such file", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
