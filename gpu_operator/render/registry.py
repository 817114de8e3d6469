"""The operands in NVIDIA's state order, and the render entry points.

The order is the ClusterPolicy controller's fixed state order (pre-requisites, driver, toolkit, validation, device
plugin, MPS, DCGM, DCGM exporter, GFD, MIG manager, node status exporter, then the sandbox operands), with the
chart's NFD objects right after the pre-requisites and our GPU health monitor (no NVIDIA state) after the node
status exporter.
The operator controller (ours, from the agents image) comes right after the pre-requisites, as NVIDIA's chart
deploys its operator before any operand; its settings are derived from the other operands' objects.
Within an operand, objects keep NVIDIA's file order (ServiceAccount → RBAC → ConfigMaps → Services → DaemonSet).
Every object leaves in the form the API server stores (:mod:`gpu_operator.render.stored`), so what we apply is
what a GET returns.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from collections.abc import Callable

from gpu_operator.config import GpuStackConfig
from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object
from gpu_operator.render.stored import as_stored

__all__ = ["Operand", "OPERANDS", "RenderedOperand", "render_operands", "render"]

#: Operand modules under gpu_operator.render.operands, in state order.
_MODULES = (
    "prerequisites",
    "node_feature_discovery",
    "driver",
    "container_toolkit",
    "operator_validator",
    "device_plugin",
    "mps_control_daemon",
    "dcgm",
    "dcgm_exporter",
    "gpu_feature_discovery",
    "mig_manager",
    "node_status_exporter",
    "health_monitor",
    "vgpu_manager",
    "vgpu_device_manager",
    "sandbox_validator",
    "vfio_manager",
    "sandbox_device_plugin",
    "kata_sandbox_device_plugin",
    "cc_manager",
)


@dataclass(frozen=True)
class Operand:
    """An operand: its short key, NVIDIA's state name, and its render function."""

    key: str
    state: str
    render: Callable[[RenderContext], list[Object]]

    @classmethod
    def from_module(cls, module: ModuleType) -> Operand:
        return cls(key=module.KEY, state=module.STATE, render=module.render)


def _load() -> tuple[Operand, ...]:
    package = "gpu_operator.render.operands"
    return tuple(Operand.from_module(importlib.import_module(f"{package}.{name}")) for name in _MODULES)


OPERANDS: tuple[Operand, ...] = _load()


@dataclass(frozen=True)
class RenderedOperand:
    """The objects of one operand, in apply order."""

    key: str
    state: str
    objects: tuple[Object, ...]


def _with_controller(ctx: RenderContext, rendered: list[RenderedOperand]) -> list[RenderedOperand]:
    """The operator controller right after the pre-requisites."""
    from gpu_operator.render.operands import operator_controller

    objects = [as_stored(obj) for obj in operator_controller.render_with(ctx)]
    if not objects:
        return rendered
    controller = RenderedOperand(operator_controller.KEY, operator_controller.STATE, tuple(objects))
    at = next((i + 1 for i, r in enumerate(rendered) if r.key == "prerequisites"), 0)
    return [*rendered[:at], controller, *rendered[at:]]


def render_operands(config: GpuStackConfig) -> list[RenderedOperand]:
    """Render every enabled operand; operands that render nothing are left out."""
    ctx = RenderContext(config)
    rendered = (RenderedOperand(op.key, op.state, tuple(as_stored(obj) for obj in op.render(ctx))) for op in OPERANDS)
    return _with_controller(ctx, [r for r in rendered if r.objects])


def render(config: GpuStackConfig) -> list[Object]:
    """All objects of the stack, flattened in apply order."""
    return [obj for operand in render_operands(config) for obj in operand.objects]
