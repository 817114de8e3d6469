"""`gpu-operator dra match CLAIM.yaml --nvml fake:h100-8x`: test a claim's CEL selectors offline.

The node's GPUs are read through the agents' NVML layer (a simulated node, or `auto` for this machine's GPUs)
and published the way NVIDIA's DRA driver would (:mod:`gpu_operator.dra.slices`); every ResourceClaim and
ResourceClaimTemplate in the file is then evaluated against them (:mod:`gpu_operator.dra.match`): per request,
how many devices pass the DeviceClass and the selectors, which, and the first reasons the others do not (`-v`:
every device with its verdict), and the devices an allocation would take. Other kinds in the file (a Pod, a
ComputeDomain) are listed as not evaluated. `--slice` prints the ResourceSlice too, to apply to a test cluster.

Exit status: 0 when every claim can be allocated on the node, 3 when one cannot, 2 for a bad file or option.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO
from collections.abc import Sequence

import yaml

from gpu_operator.config.errors import ConfigError, Problem
from gpu_operator.config.yaml_reader import read_yaml_documents
from gpu_operator.dra.match import ClaimError, MatchResult, RequestResult, match_claim
from gpu_operator.dra.slices import PublishedDevice, node_devices, resource_slice

__all__ = ["EXIT_NO_MATCH", "add_dra_parser", "run_dra"]

#: A claim cannot be allocated on the node.
EXIT_NO_MATCH = 3
_CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
_SHOWN = ("productName", "profile", "resource.kubernetes.io/pcieRoot")


def add_dra_parser(commands: Any, path_type: Any) -> None:
    """Register `dra match` under the `gpu-operator` subcommands."""
    dra = commands.add_parser("dra", help="Dynamic Resource Allocation: test ResourceClaims against a node")
    actions = dra.add_subparsers(dest="dra_command", required=True, metavar="{match}")
    match = actions.add_parser("match", help="evaluate a claim's selectors against a node's GPUs as the DRA "
                                             "driver publishes them")
    match.add_argument("claim", type=path_type, help="a YAML file with ResourceClaims or ResourceClaimTemplates")
    match.add_argument("--nvml", default=None, metavar="auto|fake:<profile>",
                       help="the node: a simulated one (fake:h100-8x, fake:a100-8x-mig, ...) or this machine's "
                            "GPUs (auto; env GPU_OPERATOR_NVML)")
    match.add_argument("--node", default="node", help="node name in the ResourceSlice (default: node)")
    match.add_argument("--slice", action="store_true", help="print the ResourceSlice as well")
    match.add_argument("-v", "--verbose", action="store_true",
                       help="every device's verdict per request (default: the matches and the first reasons)")


def _devices(spec: str) -> tuple[list[PublishedDevice], bool]:
    # imported here: the NVML layer loads pynvml, which only this command needs
    from gpu_operator.agents.nvml import NvmlError, open_nvml
    from gpu_operator.agents.nvml.selection import parse_nvml_choice

    try:
        simulated = parse_nvml_choice(spec).simulated
        nvml = open_nvml(spec)
    except (ValueError, OSError) as error:
        raise ConfigError([Problem("--nvml", f"{error}")], "gpu-operator dra match") from None
    except NvmlError as error:
        raise ConfigError([Problem("--nvml", f"NVML could not be started ({error}); on a machine without NVIDIA "
                                             "GPUs use a simulated node, e.g. --nvml fake:h100-8x")],
                          "gpu-operator dra match") from None
    try:
        return node_devices(nvml, simulated=simulated), simulated
    finally:
        nvml.close()


def _describe(device: PublishedDevice) -> str:
    parts = [str(device.attributes[name]) for name in _SHOWN if name in device.attributes]
    if "memory" in device.capacity:
        parts.append(f"memory {int(device.capacity['memory'].value) >> 20}Mi")
    return "  ".join(parts)


#: Distinct reasons a summary names per request, and device names it lists per reason (`-v` shows every device).
_FIRST_REASONS = 3
_NAMES_SHOWN = 4


def _names(devices: Sequence[str]) -> str:
    shown = ", ".join(devices[:_NAMES_SHOWN])
    return shown + (f", ... ({len(devices)} in all)" if len(devices) > _NAMES_SHOWN else "")


def _request_summary(request: RequestResult, out: TextIO) -> None:
    """The devices that match, then the first reasons the others do not, each with the devices it holds for."""
    matching = [c.device.name for c in request.candidates if c.matches]
    if matching:
        print(f"    match: {_names(matching)}", file=out)
    reasons: dict[str, list[str]] = {}
    for candidate in request.candidates:
        if not candidate.matches:
            reasons.setdefault(candidate.error or candidate.reason, []).append(candidate.device.name)
    for reason, devices in list(reasons.items())[:_FIRST_REASONS]:
        print(f"    no ({len(devices)}): {reason}: {_names(devices)}", file=out)
    if len(reasons) > _FIRST_REASONS:
        print(f"    ... {len(reasons) - _FIRST_REASONS} more reasons (-v lists every device)", file=out)


def _report(result: MatchResult, kind: str, out: TextIO, verbose: bool = False) -> None:
    """One claim: per request how many devices match and why the others do not (every device with `verbose`)."""
    print(f"{kind} {result.claim}:", file=out)
    for request in result.requests:
        wanted = "all" if request.wanted is None else str(request.wanted)
        print(f"  request {request.name}: {wanted} of {request.device_class}, {len(request.matching)} of "
              f"{len(request.candidates)} devices match", file=out)
        if not verbose:
            _request_summary(request, out)
            continue
        for candidate in request.candidates:
            verdict = "match" if candidate.matches else f"no: {candidate.error or candidate.reason}"
            print(f"    {candidate.device.name:<28} {_describe(candidate.device)}  -> {verdict}", file=out)
    if result.allocation is not None:
        taken = "; ".join(f"{name}: {', '.join(devices)}" for name, devices in result.allocation.items())
        print(f"  allocated: {taken}", file=out)
    else:
        print(f"  NOT allocatable: {result.error or result.reason}", file=out)


def run_dra(args: argparse.Namespace, out: TextIO) -> int:
    """Run `gpu-operator dra match`; ConfigError for a bad file or option."""
    path = Path(args.claim)
    documents = read_yaml_documents(path)
    claims = [d for d in documents if isinstance(d, dict) and d.get("kind") in _CLAIM_KINDS]
    others = [d for d in documents if d not in claims]
    if not claims:
        raise ConfigError([Problem("", "holds no ResourceClaim or ResourceClaimTemplate (resource.k8s.io/v1) to "
                                       "evaluate")], str(path))
    spec = args.nvml if args.nvml is not None else os.environ.get("GPU_OPERATOR_NVML", "auto")
    devices, simulated = _devices(spec)
    node = f"{spec} ({'simulated' if simulated else 'this machine'})"
    products: dict[str, int] = {}
    for device in devices:
        product = str(device.attributes.get("productName", "unknown"))
        products[product] = products.get(product, 0) + 1
    kinds = ", ".join(f"{count}x {product}" for product, count in products.items())
    print(f"node {node}: {len(devices)} devices published by gpu.nvidia.com ({kinds})"
          + ("; the PCIe root of a simulated GPU is its NUMA node's" if simulated else ""), file=out)
    if args.slice:
        print("---\n" + yaml.safe_dump(resource_slice(args.node, devices), sort_keys=False) + "---", file=out)
    for other in others:
        kind = other.get("kind", "a document without kind") if isinstance(other, dict) else "a non-mapping"
        name = (other.get("metadata") or {}).get("name", "") if isinstance(other, dict) else ""
        print(f"not evaluated: {kind} {name}".rstrip(), file=out)
    status = 0
    results: list[tuple[MatchResult, str]] = []
    problems: list[Problem] = []
    for index, document in enumerate(documents):
        if not any(document is claim for claim in claims):
            continue
        try:
            results.append((match_claim(document, devices), document["kind"]))
        except ClaimError as error:  # every claim's problems at once
            problems += [Problem(f"documents[{index}].{problem.path}", problem.message) for problem in error.problems]
    if problems:
        raise ConfigError(problems, str(path))
    for result, kind in results:
        _report(result, kind, out, verbose=args.verbose)
        if result.allocation is None:
            status = EXIT_NO_MATCH
    return status
