"""The agents image and which operands run our Python agents instead of NVIDIA's programs.

Seven operands are designed to run a drop-in agent from one image, as `gpu-operator-agent <name>`, with the same
env and mounts as the upstream container: feature discovery, metrics exporter, device plugin, MIG manager,
validator, node status exporter and driver manager. Any of them can run NVIDIA's image instead
(`implementation: nvidia`), rendered exactly as the upstream operator renders it.

This release's image ships four of those agents (:data:`SHIPPED_AGENTS`). The device plugin (with its
config-manager), MIG manager and driver manager run NVIDIA's programs until their agents ship: `implementation:
agents` applies to the shipped agents, and asking for an unshipped one by name is an error rather than a pod
that cannot start.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from gpu_operator import __version__
from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import DIGEST_PATTERN
from gpu_operator.config.kube import ImagePullPolicy

__all__ = ["AgentsImage", "AgentsConfig", "AgentOperand", "Implementation", "AGENT_OPERANDS", "SHIPPED_AGENTS"]

Implementation = Literal["agents", "nvidia"]
AgentOperand = Literal[
    "gfd", "dcgmExporter", "devicePlugin", "migManager", "validator", "nodeStatusExporter", "driverManager"
]
#: ClusterPolicy section → agent command name (`gpu-operator-agent <name>`).
AGENT_OPERANDS: dict[str, str] = {
    "gfd": "feature-discovery",
    "dcgmExporter": "metrics-exporter",
    "devicePlugin": "device-plugin",
    "migManager": "mig-manager",
    "validator": "validator",
    "nodeStatusExporter": "node-status-exporter",
    "driverManager": "driver-manager",
}

#: Sections whose agent the agents image of this release contains.
SHIPPED_AGENTS: frozenset[str] = frozenset({"gfd", "dcgmExporter", "validator", "nodeStatusExporter"})

_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class AgentsImage(ConfigModel):
    """The agents image reference: repository plus a tag, a digest, or both (the digest wins)."""

    repository: str = "ghcr.io/pulumi-gpu-operator/agents"
    tag: str = __version__
    digest: str = ""
    pull_policy: ImagePullPolicy = "IfNotPresent"
    pull_secrets: tuple[str, ...] = ()

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        if value and not _TAG.match(value):
            raise ValueError(f"{value!r} is not a valid image tag")
        return value

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: str) -> str:
        if value and not DIGEST_PATTERN.match(value):
            hint = " (the 'sha256:' prefix is missing)" if re.fullmatch(r"[0-9a-f]{64}", value) else ""
            raise ValueError(f"digest {value!r} must be 'sha256:' followed by 64 lower-case hex digits{hint}")
        return value

    @property
    def reference(self) -> str:
        if self.digest:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag}"


class AgentsConfig(ConfigModel):
    """Where the agents image lives and, per operand, whose implementation runs."""

    image: AgentsImage = AgentsImage()
    implementation: Implementation = Field(default="agents", description="default for every agent-capable operand")
    overrides: dict[AgentOperand, Implementation] = Field(
        default={}, description="per-operand choice, keyed by ClusterPolicy section (devicePlugin, gfd, ...)"
    )
    gpu_devices: bool = Field(
        default=True,
        description="with our feature-discovery agent, keep one GpuDevice object per GPU (kubectl get gpudevices)",
    )

    @field_validator("overrides")
    @classmethod
    def _shipped(cls, value: dict[str, Implementation]) -> dict[str, Implementation]:
        unshipped = sorted(s for s, choice in value.items() if choice == "agents" and s not in SHIPPED_AGENTS)
        if unshipped:
            raise ValueError(
                f"the agents image of this release has no agent for {', '.join(unshipped)} "
                f"(it ships {', '.join(sorted(SHIPPED_AGENTS))}); set nvidia or remove the override"
            )
        return value

    def implementation_of(self, operand: str) -> Implementation:
        """Which implementation runs `operand` (a ClusterPolicy section name or `driverManager`)."""
        if operand not in AGENT_OPERANDS or operand not in SHIPPED_AGENTS:
            return "nvidia"
        return self.overrides.get(operand, self.implementation)  # type: ignore[arg-type]
