"""`gpu-operator diag`: judge the GPU stack of a live cluster layer by layer, from a read-only snapshot.

Two layers, one way: :mod:`~gpu_operator.diag.fetch` reads a :class:`~gpu_operator.diag.snapshot.Snapshot` with
lightkube; everything else is pure checks over that snapshot (so tests feed it fixtures or recorded responses).
The verdicts follow the stack's chain operator → driver → toolkit → device plugin → feature discovery →
exporter → network (see :mod:`~gpu_operator.diag.findings`).
"""

from gpu_operator.diag.diagnosis import Diagnosis, diagnose
from gpu_operator.diag.findings import (
    EXIT_BROKEN,
    EXIT_DEGRADED,
    EXIT_HEALTHY,
    LAYERS,
    Finding,
    Layer,
    Severity,
    Verdict,
)
from gpu_operator.diag.nodes import Thresholds
from gpu_operator.diag.snapshot import Snapshot

__all__ = [
    "Diagnosis",
    "diagnose",
    "EXIT_BROKEN",
    "EXIT_DEGRADED",
    "EXIT_HEALTHY",
    "LAYERS",
    "Finding",
    "Layer",
    "Severity",
    "Verdict",
    "Thresholds",
    "Snapshot",
]
