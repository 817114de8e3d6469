"""Every Kubernetes object a stack creates from one config document, in apply order.

The operands are only part of a stack: with the config asking for them, the Network Operator's objects come
before them (NodeFeatureRule, NicClusterPolicy, IPoIB networks), the monitoring objects (PrometheusRule, dashboard
ConfigMap) and the DRA driver's (claim templates) after. This is what `gpu-operator render` prints, what `check`
judges and what the stack program registers beside the Helm charts; the charts' own objects are not here (Helm
renders them when they are installed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.dra import dra_objects
from gpu_operator.render.monitoring import monitoring_objects
from gpu_operator.render.network import network_objects
from gpu_operator.render.registry import RenderedOperand, render_operands

__all__ = ["stack_objects"]


def stack_objects(config: GpuStackConfig, operands: Sequence[RenderedOperand] | None = None) -> list[dict[str, Any]]:
    """The stack's objects; `operands` saves a second render when the caller has them already."""
    rendered = render_operands(config) if operands is None else operands
    return [
        *network_objects(config),
        *(obj for operand in rendered for obj in operand.objects),
        *monitoring_objects(config),
        *dra_objects(config),
    ]
