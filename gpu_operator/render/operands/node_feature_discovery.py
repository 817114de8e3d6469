"""node-feature-discovery: what NVIDIA's chart adds to NFD, applied after the NFD chart itself.

The NFD chart (installed by the GpuOperator component when `nfd.enabled`, see :mod:`gpu_operator.render.nfd`) brings
the NodeFeatureRule CRD; this state holds the objects that need it: the `nvidia-kernel-modules` rule when
`nfd.nodefeaturerules` is set. NVIDIA's chart renders the rule next to the subchart; it is not an operator state.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object
from gpu_operator.render.nfd import node_feature_rules

__all__ = ["STATE", "KEY", "render"]

STATE = "node-feature-discovery"
KEY = "node_feature_discovery"


def render(ctx: RenderContext) -> list[Object]:
    return node_feature_rules(ctx.config)
