"""`gpu-operator`: render manifests and import Helm values from the command line, no cluster needed.

    gpu-operator render [-f CONFIG] [-o DIR] [--summary]   manifests in apply order (stdout: multi-document YAML)
    gpu-operator import-values FILE [-n NAMESPACE]          Helm values or a ClusterPolicy manifest → our config

Without `-f`, `render` uses the built-in default stack. With `-o DIR`, the AKS resources of the config (one
agent pool per GPU pool, and the cluster when the stack creates it) are written as ARM JSON under `DIR/azure/`;
stdout only ever carries Kubernetes manifests. A bad config prints every problem and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from gpu_operator.config import ConfigError, GpuStackConfig, load_config
from gpu_operator.manifests import dump_all_yaml, dump_yaml, format_table, summary_rows, write_directory
from gpu_operator.render.registry import RenderedOperand

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


def _write_azure(config: GpuStackConfig, directory: Path) -> list[Path]:
    """Write the config's ARM documents under `directory/azure/`, replacing the ones a previous render wrote."""
    from gpu_operator.render.aks.documents import AZURE_FILE_PREFIXES, azure_documents

    documents = azure_documents(config)
    azure = directory / "azure"
    if azure.is_dir():
        for stale in azure.glob("*.json"):
            if stale.name.startswith(AZURE_FILE_PREFIXES):
                stale.unlink()
    if documents:
        azure.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, document in documents.items():
        path = azure / name
        path.write_text(json.dumps(document, indent=2) + "\n")
        paths.append(path)
    return paths


def _print_summary(
    config: GpuStackConfig, operands: Sequence[RenderedOperand], objects: Sequence[dict[str, Any]]
) -> None:
    from gpu_operator.render.aks.summary import POOL_HEADER, pool_summary_rows
    from gpu_operator.render.nfd import nfd_chart

    print(format_table(("STATE", "OBJECTS", "DAEMONSETS", "IMAGES"), summary_rows(operands)))
    print(f"{len(objects)} objects, {sum(o['kind'] == 'DaemonSet' for o in objects)} DaemonSets, "
          f"namespace {config.namespace}")
    chart = nfd_chart(config)
    if chart is not None:
        print(f"plus Helm chart {chart.chart} {chart.version} (Node Feature Discovery, installed by GpuOperator)")
    aks = config.aks
    if config.pools and aks is not None:
        created = "created by the stack" if aks.create else "existing"
        print(f"\nGPU pools in AKS cluster {aks.resource_group}/{aks.cluster_name} ({created}):")
        print(format_table(POOL_HEADER, pool_summary_rows(config)))


def _render(args: argparse.Namespace) -> int:
    from gpu_operator.render import render_operands

    config = load_config(args.file)
    operands = render_operands(config)
    objects = [obj for operand in operands for obj in operand.objects]
    if args.output is not None:
        paths = write_directory(objects, args.output)
        azure = _write_azure(config, args.output)
        where = sys.stderr if not args.summary else sys.stdout
        print(f"wrote {len(paths)} objects to {args.output}/", file=where)
        if azure:
            plural = "s" if len(azure) != 1 else ""
            print(f"wrote {len(azure)} AKS resource{plural} to {args.output / 'azure'}/", file=where)
    elif not args.summary:
        sys.stdout.write(dump_all_yaml(objects))
    if args.summary:
        _print_summary(config, operands, objects)
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
