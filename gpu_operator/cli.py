"""`gpu-operator`: render manifests and import Helm values from the command line, no cluster needed.

    gpu-operator render [-f CONFIG] [-o DIR] [--summary]   manifests in apply order (stdout: multi-document YAML)
    gpu-operator render [-f CONFIG] --graph                 the apply order as a Mermaid flowchart
    gpu-operator import-values FILE [DRIVERS ...] [-n NS]   Helm values or a ClusterPolicy (+ NVIDIADrivers) → our config
    gpu-operator dashboard [-f CONFIG] [-o FILE]            the GPU fleet's Grafana dashboard JSON
    gpu-operator images [-f CONFIG] [-o text|json|pairs]    every image and chart the stack pulls, for a mirror
    gpu-operator check [-f CONFIG] [--output text|json|sarif]  the policies over the stack's objects (exit 3)
    gpu-operator dra match CLAIM.yaml --nvml fake:h100-8x    a DRA claim's selectors against a node (exit 3: no fit)
    gpu-operator diag [--kubeconfig PATH] [-n NS] [-o json]   a live cluster's GPU stack, layer by layer (exit 3/4)
    gpu-operator upgrade status [--kubeconfig PATH] [--watch]  the driver rollout per stage and pool (exit 3: halted)

Without `-f`, `render` uses the built-in default stack; `-f -` reads the document from standard input. `-f` also takes a Pulumi stack file
(`stacks/Pulumi.prod.yaml`): its `gpu-operator:config` document is rendered, so any environment can be reviewed
without the Pulumi CLI. With `-o DIR`, the AKS resources of the config (one agent pool per GPU pool, and the
cluster when the stack creates it) are written as ARM JSON under `DIR/azure/`, and the values of the Helm charts
installed beside the manifests (the Network Operator's, with InfiniBand pools; Node Feature Discovery's otherwise)
under `DIR/helm/`; stdout only ever carries Kubernetes manifests.

No input ends in a traceback. A bad file, config or output directory prints `error: <path>: <what>` with the fix
on stderr, exits with status 2 and writes nothing (everything is rendered in memory before the first file is
written); a bad command line prints the usage and exits with status 2. Anything else is a bug of this package: it
is reported in one line, with status 1 (`GPU_OPERATOR_TRACEBACK=1` shows the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO
from collections.abc import Callable, Sequence

from gpu_operator.config import ConfigError, GpuStackConfig, Problem, parse_config
from gpu_operator.counts import count_phrase
from gpu_operator.diag.command import add_diag_parser, run_diag
from gpu_operator.diag.upgrade_command import add_upgrade_parser, run_upgrade
from gpu_operator.dra.command import add_dra_parser, run_dra
from gpu_operator.manifests import (
    SUMMARY_HEADER,
    dump_all_yaml,
    dump_yaml,
    format_table,
    manifest_files,
    summary_rows,
    write_files,
)
from gpu_operator.render.helm_chart import HelmChart
from gpu_operator.render.monitoring import dashboard_json
from gpu_operator.render.network import network_summary
from gpu_operator.render.nfd import nfd_chart
from gpu_operator.render.registry import RenderedOperand
from gpu_operator.render.stack import stack_objects

__all__ = ["main", "build_parser", "format_error", "EXIT_USAGE", "EXIT_BUG"]

#: Bad input: a file, a config, an output directory or the command line.
EXIT_USAGE = 2
#: A bug of this package (an exception no input should cause).
EXIT_BUG = 1
#: stdout's reader went away (`| head`): what a shell reports for a process ended by SIGPIPE.
EXIT_PIPE_CLOSED = 141
#: Set to show the traceback of a bug instead of the one-line report.
TRACEBACK_VARIABLE = "GPU_OPERATOR_TRACEBACK"


class UsageError(Exception):
    """A command line argparse refused; `parser` is the (sub)command it was refused by."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises UsageError instead of printing and exiting, so main() reports it."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self, message)


def _path(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("an empty path (an unset variable?); give a path")
    return Path(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpu-operator", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{render,import-values,dashboard,images,check,dra,diag,upgrade}")

    render = commands.add_parser("render", help="render the stack's Kubernetes objects")
    render.add_argument("-f", "--file", type=_path,
                        help="config document or Pulumi stack file, - for standard input (default: the built-in default stack)")
    render.add_argument("-o", "--output", type=_path, help="directory for one file per object (default: stdout)")
    render.add_argument("--summary", action="store_true", help="print a table of operands, DaemonSets and images")
    render.add_argument("--graph", action="store_true",
                        help="print the apply order (what waits for what at pulumi up) as a Mermaid flowchart")

    values = commands.add_parser(
        "import-values", help="convert GPU Operator Helm values (or a ClusterPolicy manifest) to a config document"
    )
    values.add_argument("values", type=_path, help="a gpu-operator values.yaml, or a ClusterPolicy manifest (with "
                                                   "NVIDIADriver manifests beside it, one file)")
    values.add_argument("drivers", nargs="*", type=_path,
                        help="files of NVIDIADriver manifests, imported beside the values (as drivers entries)")
    values.add_argument("-n", "--namespace", default="gpu-operator", help="namespace of the operands")

    dashboard = commands.add_parser("dashboard", help="write the GPU fleet's Grafana dashboard (JSON)")
    dashboard.add_argument("-f", "--file", type=_path,
                           help="config document or Pulumi stack file, - for standard input (default: the built-in default stack)")
    dashboard.add_argument("-o", "--output", type=_path, help="file to write, for import by hand (default: stdout)")
    images = commands.add_parser("images", help="list every image and Helm chart the stack pulls (to mirror them)")
    images.add_argument("-f", "--file", type=_path,
                        help="config document or Pulumi stack file, - for standard input (default: the built-in default stack)")
    images.add_argument("-o", "--output", choices=("text", "json", "pairs"), default="text",
                        help="text, json, or pairs: one '<image> <mirror>' line per image (default: text)")
    check = commands.add_parser("check", help="run the policies over the stack's objects (exit 3 on a mandatory one)")
    check.add_argument("-f", "--file", type=_path,
                       help="config document or Pulumi stack file, - for standard input (default: the built-in default stack)")
    check.add_argument("--production", action="store_true",
                       help="the stack is a production one (advises against unlimited parallel driver upgrades)")
    check.add_argument("--output", choices=("text", "json", "sarif"), default="text",
                       help="report format: text, json, or SARIF 2.1.0 for code scanning (default: text)")
    add_dra_parser(commands, _path)
    add_diag_parser(commands)
    add_upgrade_parser(commands, _path)
    return parser


def format_error(error: ConfigError) -> str:
    """`error: <source>: <problem>` for one problem; the count and one line per problem for several."""
    if len(error.problems) == 1:
        return f"error: {error.source}: {error.problems[0]}"
    lines = "\n".join(f"  - {problem}" for problem in error.problems)
    return f"error: {error.source}: {len(error.problems)} problems:\n{lines}"


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


@dataclass(frozen=True)
class _Chart:
    """A Helm chart a component installs beside the manifests: what it is, who installs it, from where, its values."""

    spec: HelmChart
    what: str
    installer: str


def _charts(config: GpuStackConfig) -> list[_Chart]:
    from gpu_operator.render.dra import render_dra
    from gpu_operator.render.network import render_network

    charts: list[_Chart] = []
    network = render_network(config)
    if network is not None:
        charts.append(_Chart(network.chart, "the NVIDIA Network Operator", "NetworkOperator"))
    dra = render_dra(config)
    if dra is not None:
        charts.append(_Chart(dra.chart, "NVIDIA's DRA driver", "DraDriver"))
    nfd = nfd_chart(config)
    if nfd is not None:
        charts.append(_Chart(nfd, "Node Feature Discovery", "GpuOperator"))
    return charts


def _chart_line(chart: _Chart) -> str:
    spec = chart.spec
    return f"Helm chart {spec.name} {spec.version} from {spec.source.origin} in namespace {spec.namespace}"


def _values_file(chart: _Chart) -> str:
    return f"helm/{chart.spec.name}-values.yaml"


#: `helm template` arguments that name the chart, by kind of source.
_HELM_SOURCE_ARGUMENTS: dict[str, Callable[[HelmChart], str]] = {
    "repository": lambda spec: f"{spec.chart} --repo {spec.repository} --version {spec.version}",
    "oci": lambda spec: f"{spec.chart} --version {spec.version}",
    "path": lambda spec: shlex.quote(spec.chart),
}


def _values_text(chart: _Chart) -> str:
    spec = chart.spec
    local = spec.source.kind == "path" and not Path(spec.chart).is_absolute()
    header = (
        f"# Helm chart {spec.name} {spec.version} from {spec.source.origin}, namespace {spec.namespace}:\n"
        f"# {chart.what}, which {chart.installer} installs with these values beside this directory's manifests.\n"
        f"# Its objects: helm template {spec.name} {_HELM_SOURCE_ARGUMENTS[spec.source.kind](spec)} \\\n"
        f"#   --namespace {spec.namespace} -f {_values_file(chart)}\n"
        + ("# (from the config file's directory: the chart's path is relative to it)\n" if local else "")
    )
    return header + dump_yaml(spec.values)


def _output_files(
    config: GpuStackConfig, objects: Sequence[dict[str, Any]], charts: Sequence[_Chart]
) -> dict[str, str]:
    """Every file `-o` writes, rendered in memory: manifests, ARM documents, the NFD chart's values."""
    from gpu_operator.render.aks.documents import azure_documents

    files = manifest_files(objects)
    for name, document in azure_documents(config).items():
        files[f"azure/{name}"] = json.dumps(document, indent=2) + "\n"
    for chart in charts:
        files[_values_file(chart)] = _values_text(chart)
    return files


def _print_summary(
    out: TextIO,
    config: GpuStackConfig,
    operands: Sequence[RenderedOperand],
    objects: Sequence[dict[str, Any]],
    charts: Sequence[_Chart],
    output: Path | None,
) -> None:
    from gpu_operator.render.aks.summary import POOL_HEADER, pool_summary_rows

    print(format_table(SUMMARY_HEADER, summary_rows(operands, config)), file=out)
    daemonsets = sum(o["kind"] == "DaemonSet" for o in objects)
    print(f"{count_phrase(len(objects), len(charts))}; {daemonsets} DaemonSets; operands in namespace "
          f"{config.namespace}", file=out)
    for chart in charts:
        print(f"\nplus {_chart_line(chart)} ({chart.what}, installed by {chart.installer}), with values"
              + (f" in {output / _values_file(chart)}" if output is not None else ":"), file=out)
        if output is None:
            print("\n".join(f"  {line}" for line in dump_yaml(chart.spec.values).splitlines()), file=out)
    rdma = network_summary(config)
    if rdma:
        print("\nRDMA wiring (NetworkOperator):", file=out)
        print("\n".join(f"  {line}" for line in rdma), file=out)
    aks = config.aks
    if config.pools and aks is not None:
        created = "created by the stack" if aks.create else "existing"
        print(f"\nGPU pools in AKS cluster {aks.resource_group}/{aks.cluster_name} ({created}):", file=out)
        print(format_table(POOL_HEADER, pool_summary_rows(config)), file=out)


def _load_config(path: Path | None, *, setting_notes: bool = True) -> GpuStackConfig:
    """The config of `-f` (a document or a stack file; the built-in default without one), its notes on stderr:
    the file's, then (with `setting_notes`) the settings that have no effect in it; `render` prints those with
    its other notes instead (:func:`gpu_operator.render.notes.render_notes`)."""
    from gpu_operator.config.loader import document_directory, load_document
    from gpu_operator.config.unused_settings import unused_setting_notes

    loaded = load_document(path)
    for message in loaded.notes:
        _note(message)
    config = parse_config(loaded.document, source=loaded.source, base=document_directory(path))
    for message in unused_setting_notes(config) if setting_notes else ():
        _note(message)
    return config


#: The release each installer gives its chart in the stack program (stacks/__main__.py names the components
#: gpu, gpu-network and gpu-dra; a component's chart is `<component>-chart`).
_CHART_RELEASES = {"NetworkOperator": "gpu-network-chart", "DraDriver": "gpu-dra-chart",
                   "GpuOperator": "gpu-node-feature-discovery-chart"}


def _expanded_charts(config: GpuStackConfig, base: Path) -> list[dict[str, Any]]:
    """Every object the stack's charts render to, as the policy pack sees them (gpu_operator.policy.charts); a
    chart that cannot be rendered here is named on stderr, its objects unjudged."""
    from gpu_operator.policy.charts import ChartExpansionError, expand_chart

    kubernetes = config.dra.kubernetes_version or (config.aks.kubernetes_version if config.aks else None)
    objects: list[dict[str, Any]] = []
    for chart in _charts(config):
        try:
            objects += expand_chart(chart.spec, _CHART_RELEASES.get(chart.installer, f"{chart.spec.name}-chart"),
                                    kubernetes_version=kubernetes, base=base)
        except ChartExpansionError as error:
            _note(f"{error}: the policy pack judges its objects at pulumi preview; check judged only its values")
    return objects


def _check(args: argparse.Namespace, out: TextIO) -> int:
    from gpu_operator.policy import (
        EXIT_MANDATORY,
        Enforcement,
        PolicyContext,
        check,
        format_json,
        format_sarif,
        format_text,
    )
    from gpu_operator.policy.model import chart_object
    from gpu_operator.render import render_operands
    from gpu_operator.render.operands.driver_update import driver_update_notes
    from gpu_operator.render.operands.operator_controller import controller_notes

    config = _load_config(args.file)
    # what is off without the controller, and how a driver change reaches the nodes, as render says it
    for message in [*controller_notes(config), *driver_update_notes(config)]:
        _note(message)
    charts = [chart_object(c.spec.name, c.spec.namespace, c.spec.chart, c.spec.pinned_version or "", c.spec.values)
              for c in _charts(config)]
    stack = stack_objects(config, render_operands(config))
    expanded = _expanded_charts(config, Path(args.file).parent if args.file is not None else Path.cwd())
    findings = check([*charts, *expanded, *stack], PolicyContext.from_config(config, production=args.production))
    formats = {"text": format_text, "json": format_json, "sarif": format_sarif}
    # counted as render counts them: the stack's Kubernetes objects, and the charts beside them
    out.write(formats[args.output](findings, len(stack), len(charts)))
    return EXIT_MANDATORY if any(f.policy.enforcement is Enforcement.MANDATORY for f in findings) else 0


def _render(args: argparse.Namespace, out: TextIO) -> int:
    from gpu_operator.render import render_operands
    from gpu_operator.render.notes import render_notes

    if args.graph and (args.output is not None or args.summary):
        raise ConfigError([Problem("--graph", "prints the apply order alone: leave out -o and --summary, or run "
                                              "render twice")], "command line")
    config = _load_config(args.file, setting_notes=False)
    if args.graph:
        from gpu_operator.render.apply_graph import apply_graph, mermaid

        out.write(mermaid(apply_graph(config)))
        return 0
    operands = render_operands(config)
    objects = stack_objects(config, operands)
    charts = _charts(config)
    if args.output is not None:
        files = _output_files(config, objects, charts)
        paths = write_files(files, args.output)
        where = out if args.summary else sys.stderr
        azure = sum(path.parent.name == "azure" for path in paths)
        print(f"wrote {count_phrase(len(objects))} to {args.output}/", file=where)
        if azure:
            print(f"wrote {azure} AKS resource{'s' if azure != 1 else ''} to {args.output / 'azure'}/", file=where)
        for chart in charts:
            print(f"wrote the values of {_chart_line(chart)} to {args.output / _values_file(chart)}", file=where)
    elif not args.summary:
        out.write(dump_all_yaml(objects))
        for chart in charts:
            _note(f"{chart.installer} also installs {_chart_line(chart)}; its values: --summary, or -o DIR")
    if args.summary:
        _print_summary(out, config, operands, objects, charts, args.output)
    for message in render_notes(config):  # once the render has succeeded; the stack program logs the same
        _note(message)
    return 0


def _import_values(args: argparse.Namespace, out: TextIO) -> int:
    from gpu_operator.config.importers import (
        ignored_clusterpolicy_values,
        ignored_helm_values,
        ignored_network_values,
        load_import,
    )
    from gpu_operator.config.importers.network import is_network_values
    from gpu_operator.config.importers.operand_versions import mixed_versions_note
    from gpu_operator.config.importers.loader import is_manifest
    from gpu_operator.config.loader import yaml_kind
    from gpu_operator.config.yaml_reader import STDIN, read_yaml_documents

    if str(args.values) == STDIN:
        raise ConfigError([Problem("", "import-values reads a file, not standard input: save the values to a "
                                       "file (`... > values.yaml`) and name it")],
                          "standard input")
    documents = read_yaml_documents(args.values)  # refuses what plain YAML reading lets through, before importing
    if not documents:
        _note(f"{args.values} is empty: importing the chart's defaults")
    elif not all(isinstance(document, dict) for document in documents):
        kind = next(yaml_kind(d) for d in documents if not isinstance(d, dict))
        raise ConfigError([Problem("", f"must hold a mapping (Helm values) or a manifest, but holds {kind}")],
                          str(args.values))
    document = load_import(args.values, namespace=args.namespace, drivers=args.drivers)
    out.write(dump_yaml(document))
    mixed = mixed_versions_note(document)
    if mixed is not None:
        _note(mixed)
    if len(documents) == 1 and not is_manifest(documents[0]):
        ignored = ignored_network_values if is_network_values(documents[0]) else ignored_helm_values
        for key, reason in ignored(documents[0]).items():
            # a note on a value that was imported says so itself ("imported as ..., but ...")
            _note(f"{key}: {reason}" if reason.startswith("imported") else f"{key} not imported: {reason}")
    for manifest in (d for d in documents if is_manifest(d) and d.get("kind") == "ClusterPolicy"):
        for key, reason in ignored_clusterpolicy_values(manifest).items():
            _note(f"{key} has no effect here: {reason}")
    for message in _imported_document_notes(document):
        _note(message)
    return 0


def _imported_document_notes(document: dict[str, Any]) -> list[str]:
    """How a driver change will reach the nodes with the imported document (as render says it), or what the
    document still needs before it renders (a controller for NVIDIADrivers that select nodes, ...)."""
    from gpu_operator.config import parse_config
    from gpu_operator.config.driver_groups import unlabelled_driver_notes
    from gpu_operator.render.operands.driver_update import driver_update_notes

    try:
        config = parse_config(document, source="the imported document")
    except ConfigError as error:
        return [f"before it renders, the imported document needs: {problem}" for problem in error.problems]
    return [*driver_update_notes(config), *unlabelled_driver_notes(config)]


#: command → its function, which writes what goes to stdout into `out` (written once it has all succeeded)
def _dashboard(args: argparse.Namespace, out: TextIO) -> int:

    text = dashboard_json(_load_config(args.file))
    if args.output is None:
        out.write(text)
        return 0
    target: Path = args.output
    if target.is_dir():
        raise ConfigError([Problem("", "is a directory: name the dashboard's JSON file, e.g. gpu-dashboard.json")],
                          str(target))
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError([Problem("", f"cannot be written: {error.strerror or error}; name a file in a writable "
                                       "directory")], str(target)) from None
    print(f"wrote the Grafana dashboard to {target}", file=sys.stderr)
    return 0


def _images(args: argparse.Namespace, out: TextIO) -> int:
    """What the config pulls, each with the reference its `registry` mirror serves it as."""
    from gpu_operator.config.loader import document_directory, load_document
    from gpu_operator.images_report import FORMATS
    from gpu_operator.render.pulled import pairs, pulled_charts, pulled_images

    loaded = load_document(args.file)
    for message in loaded.notes:
        _note(message)
    base = document_directory(args.file)
    config = parse_config(loaded.document, source=loaded.source, base=base)
    upstream = config
    if config.registry is not None:  # the same document without the mirror: where each item comes from
        document = {key: value for key, value in (loaded.document or {}).items() if key != "registry"}
        upstream = parse_config(document, source=loaded.source, base=base)
    images = pairs(pulled_images(upstream), pulled_images(config))
    charts = pairs(pulled_charts(upstream), pulled_charts(config))
    out.write(FORMATS[args.output](config.registry, images, charts))
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "render": _render,
    "import-values": _import_values,
    "dashboard": _dashboard,
    "images": _images,
    "check": _check,
    "dra": run_dra,
    "diag": run_diag,
    "upgrade": run_upgrade,
}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    try:
        return build_parser().parse_args(argv)
    except UsageError as error:
        print(f"error: {error.parser.prog}: {error}", file=sys.stderr)
        print(error.parser.format_usage().rstrip(), file=sys.stderr)
        print(f"run `{error.parser.prog} --help` for the options", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as done:  # --help
        return done.code if isinstance(done.code, int) else 0


def _silence_stdout() -> None:
    """After a closed pipe (`gpu-operator render | head`): let the interpreter's final flush go nowhere."""
    with contextlib.suppress(OSError, ValueError):  # stdout without a file descriptor: nothing to redirect
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _emit(text: str) -> int | None:
    """Write the command's stdout; an exit status when stdout cannot take it."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as error:
        print(f"error: standard output: cannot be written: {error.strerror or error}; redirect it to a file on a "
              "disk with space, or use -o DIR", file=sys.stderr)
        return EXIT_USAGE
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parsed = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    out = io.StringIO()
    try:
        status = _COMMANDS[parsed.command](parsed, out)
    except ConfigError as error:
        print(format_error(error), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        print(f"error: internal error ({type(error).__name__}: {error}); this is a bug in gpu-operator, not a "
              f"problem with your input: please report it with the command you ran ({TRACEBACK_VARIABLE}=1 shows "
              "the traceback)", file=sys.stderr)
        return EXIT_BUG
    failed = _emit(out.getvalue())
    return failed if failed is not None else status


if __name__ == "__main__":
    sys.exit(main())
