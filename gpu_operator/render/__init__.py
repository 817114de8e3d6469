"""Pure rendering: a validated config in, Kubernetes objects (plain dicts) out, in NVIDIA's apply order.

Nothing here imports Pulumi or touches the network, so rendering is fast, deterministic and golden-testable.
The operand registry and the render context are imported on first use, so importing one operand module does not
import them all, and the config layer can use the leaf module :mod:`gpu_operator.facts.quantity` (to refuse a
quantity the API server cannot store) without importing the config back.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OPERANDS", "Operand", "RenderContext", "RenderedOperand", "render", "render_operands"]

_REGISTRY_NAMES = {"OPERANDS", "Operand", "RenderedOperand", "render", "render_operands"}


def __getattr__(name: str) -> Any:
    if name in _REGISTRY_NAMES:
        from gpu_operator.render import registry

        return getattr(registry, name)
    if name == "RenderContext":
        from gpu_operator.render.context import RenderContext

        return RenderContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
