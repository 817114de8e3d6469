"""What `gpu-operator render`, `render --summary` and `check` count, said the same way by all three.

The stack's objects are the Kubernetes objects `render` prints (or writes with `-o`) and the program registers
beside the Helm charts: the operands', the Network Operator's wiring, the monitoring and DRA objects. A Helm chart
installed beside them (Node Feature Discovery, the Network Operator, the DRA driver) counts as one chart: its own
objects are Helm's, rendered when it is installed, and counted by no command. `check` judges both: every object,
and each chart's values.
"""

from __future__ import annotations

__all__ = ["count_phrase"]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def count_phrase(objects: int, charts: int = 0) -> str:
    """`52 Kubernetes objects and 1 Helm chart` (the charts left out when there are none)."""
    phrase = _plural(objects, "Kubernetes object")
    return f"{phrase} and {_plural(charts, 'Helm chart')}" if charts else phrase
