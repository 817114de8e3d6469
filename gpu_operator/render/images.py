"""Image references: NVIDIA's `ImagePath` rule, the driver OS suffix, and the agents image.

* repository, image and version set: `repository/image:version`, or `repository/image@sha256:...` for a digest;
* only image set: the image is a full reference and is used verbatim;
* the driver, vGPU manager, GDS and GDRCopy images get `-<osTag>` appended to the tag (never to a digest).

Operands that our agents implement use the agents image instead, when one is configured or built and the
operand is not configured `implementation: nvidia` (:func:`gpu_operator.config.agents.choose_implementation`
decides; :func:`operand_implementation` answers it per operand for the summary).
"""

from __future__ import annotations

from gpu_operator.config.agents import AgentChoice
from gpu_operator.config.clusterpolicy.common import ImageFields
from gpu_operator.render.context import RenderContext

__all__ = ["OPERAND_SECTIONS", "image_path", "operand_image", "operand_implementation", "pull_policy", "pull_secrets"]

#: Operand key → the ClusterPolicy section whose agent would run its main container. The other operands have no
#: agent (the driver's only agent-capable container is its driver-manager init container).
OPERAND_SECTIONS: dict[str, str] = {
    "operator_validator": "validator",
    "device_plugin": "devicePlugin",
    "dcgm_exporter": "dcgmExporter",
    "gpu_feature_discovery": "gfd",
    "mig_manager": "migManager",
    "node_status_exporter": "nodeStatusExporter",
    "health_monitor": "healthMonitor",
}


def image_path(spec: ImageFields, os_tag: str | None = None) -> str:
    """Resolve an operand's image as NVIDIA does (see the module docstring)."""
    if not spec.repository and not spec.version:
        reference = spec.image
    elif spec.version.startswith("sha256:"):
        reference = f"{spec.repository}/{spec.image}@{spec.version}"
    else:
        reference = f"{spec.repository}/{spec.image}:{spec.version}"
    if os_tag and "sha256:" not in reference:
        return f"{reference}-{os_tag}"
    return reference


def operand_image(ctx: RenderContext, section: str, spec: ImageFields) -> str:
    """The image of `section`'s main container: the agents image when our agent implements it."""
    if ctx.uses_agent(section):
        return ctx.config.agents.image.reference
    return image_path(spec)


def operand_implementation(ctx: RenderContext, operand: str) -> AgentChoice:
    """Whose program runs the main container of `operand` (a registry key such as `dcgm_exporter`), and why."""
    return ctx.implementation(OPERAND_SECTIONS.get(operand))


def pull_policy(ctx: RenderContext, section: str, spec: ImageFields) -> str:
    if ctx.uses_agent(section):
        return ctx.config.agents.image.pull_policy
    return spec.image_pull_policy


def pull_secrets(ctx: RenderContext, section: str, spec: ImageFields) -> tuple[str, ...]:
    if ctx.uses_agent(section):
        return ctx.config.agents.image.pull_secrets
    return spec.image_pull_secrets
