"""Findings and verdicts of `gpu-operator diag`: what is wrong, in which layer, and what to run next.

The GPU stack is a chain of layers, each of which needs the ones before it on every node: the operator itself
(its controller and the labels that mark GPU nodes), then driver → container toolkit → device plugin (with the MIG
manager, which decides what the plugin advertises) → feature discovery → exporter → network (MOFED and the RDMA
device plugins). A finding belongs to one layer and has a severity: `error` breaks the layer, `warning` degrades it,
`info` is worth knowing but changes no verdict. A layer is `broken`, `degraded`, `ok`, or `not deployed` (nothing
of it runs and nothing is expected of it). The first broken layer in the chain is where to start: a broken driver
explains a broken toolkit, never the other way round.

The exit status follows the worst finding, so scripts and CI can gate on it: 0 healthy (info at most), 3 degraded,
4 broken. 2 stays bad input (no kubeconfig, an unreachable or refusing API server) and 1 a bug of this package.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "Layer",
    "LAYERS",
    "Severity",
    "Finding",
    "Verdict",
    "LayerVerdict",
    "layer_verdicts",
    "first_broken",
    "exit_status",
    "EXIT_HEALTHY",
    "EXIT_DEGRADED",
    "EXIT_BROKEN",
]

EXIT_HEALTHY = 0
EXIT_DEGRADED = 3
EXIT_BROKEN = 4


class Layer(str, Enum):
    OPERATOR = "operator"
    DRIVER = "driver"
    TOOLKIT = "toolkit"
    DEVICE_PLUGIN = "device-plugin"
    FEATURE_DISCOVERY = "feature-discovery"
    EXPORTER = "exporter"
    NETWORK = "network"


#: The chain, in the order a node comes up.
LAYERS: tuple[Layer, ...] = tuple(Layer)


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


class Verdict(str, Enum):
    OK = "ok"
    DEGRADED = "degraded"
    BROKEN = "broken"
    NOT_DEPLOYED = "not deployed"


@dataclass(frozen=True)
class Finding:
    """One thing found: the check that found it, its layer and severity, the object it is about
    (`node/NAME`, `pod/NS/NAME`, `daemonset/NS/NAME`, ...), what is wrong, and the next command to run."""

    check: str
    layer: Layer
    severity: Severity
    subject: str
    what: str
    next: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "layer": self.layer.value, "severity": self.severity.value,
                "subject": self.subject, "what": self.what, "next": self.next}


@dataclass(frozen=True)
class LayerVerdict:
    layer: Layer
    verdict: Verdict
    findings: tuple[Finding, ...]


def layer_verdicts(findings: Iterable[Finding], deployed: set[Layer]) -> list[LayerVerdict]:
    """One verdict per layer, in chain order; a layer with findings is never `not deployed`."""
    by_layer: dict[Layer, list[Finding]] = {layer: [] for layer in LAYERS}
    for finding in findings:
        by_layer[finding.layer].append(finding)
    verdicts = []
    for layer in LAYERS:
        found = sorted(by_layer[layer], key=lambda f: (-_RANK[f.severity], f.subject, f.check))
        severities = {f.severity for f in found}
        if Severity.ERROR in severities:
            verdict = Verdict.BROKEN
        elif Severity.WARNING in severities:
            verdict = Verdict.DEGRADED
        elif layer in deployed or found:
            verdict = Verdict.OK
        else:
            verdict = Verdict.NOT_DEPLOYED
        verdicts.append(LayerVerdict(layer, verdict, tuple(found)))
    return verdicts


def first_broken(verdicts: Sequence[LayerVerdict]) -> Layer | None:
    return next((v.layer for v in verdicts if v.verdict is Verdict.BROKEN), None)


def exit_status(findings: Iterable[Finding]) -> int:
    worst = max((_RANK[f.severity] for f in findings), default=0)
    return {0: EXIT_HEALTHY, 1: EXIT_DEGRADED, 2: EXIT_BROKEN}[worst]
