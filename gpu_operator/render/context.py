"""The render context: a validated config plus the facts every operand derives from it.

NVIDIA's operator computes a few cluster-wide facts once per reconcile (the container runtime, the runtime class
rule, whether CDI or the NRI plugin is on) and every operand transform reads them. We compute them once, from
config, so operand modules stay short and agree with each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from gpu_operator.config import GpuStackConfig
from gpu_operator.config.agents import AGENT_OPERANDS, AgentChoice, choose_implementation
from gpu_operator.config.clusterpolicy.spec import ClusterPolicySpec

__all__ = ["RenderContext", "MANAGED_BY"]

#: Added to the metadata of every object we render (never to selectors).
MANAGED_BY = {"app.kubernetes.io/managed-by": "pulumi-gpu-operator"}


@dataclass(frozen=True)
class RenderContext:
    """Read-only view of a config for operand renderers."""

    config: GpuStackConfig

    @property
    def spec(self) -> ClusterPolicySpec:
        return self.config.operator

    @property
    def namespace(self) -> str:
        return self.config.namespace

    @property
    def runtime(self) -> str:
        """The container runtime the toolkit configures (containerd, crio or docker)."""
        return self.config.cluster.container_runtime

    @property
    def cdi_enabled(self) -> bool:
        return self.spec.cdi.enabled

    @property
    def nri_plugin(self) -> bool:
        return self.spec.cdi.nri_plugin_enabled

    @cached_property
    def runtime_class(self) -> str | None:
        """The runtimeClassName GPU-using operands get, or None (NRI plugin on, or CRI-O without CDI)."""
        if self.nri_plugin or (not self.cdi_enabled and self.runtime == "crio"):
            return None
        return self.spec.operator.runtime_class

    @property
    def sandbox_enabled(self) -> bool:
        return self.spec.sandbox_workloads.enabled

    @property
    def mig_strategy(self) -> str:
        return self.spec.mig.strategy

    def implementation(self, section: str | None) -> AgentChoice:
        """Whose program runs `section` (devicePlugin, gfd, ..., driverManager), and why."""
        return choose_implementation(self.config.agents, section)

    def uses_agent(self, section: str) -> bool:
        """True when `section` (devicePlugin, gfd, ..., driverManager) runs our agent rather than NVIDIA's program."""
        return self.implementation(section).implementation == "agents"

    def agent_command(self, section: str, *args: str) -> list[str]:
        """`gpu-operator-agent <name> [args]` for an agent-implemented section."""
        return ["gpu-operator-agent", AGENT_OPERANDS[section], *args]
