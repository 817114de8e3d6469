"""The agents image, and which operands run our Python agents instead of NVIDIA's programs.

Seven operands are designed to run a drop-in agent from one image, as `gpu-operator-agent <name>`, with the same
env and mounts as the upstream container: feature discovery, metrics exporter, device plugin, MIG manager,
validator, node status exporter and driver manager; this release's image ships all seven
(:data:`SHIPPED_AGENTS`). The device plugin's pods also get our config-manager (init container and sidecar), and
the operator controller (`gpu-operator-agent operator`) runs from the same image. One more agent has no NVIDIA
program to replace: the GPU health monitor (`healthMonitor`), rendered only where our agents run; `nvidia` for it
means no health monitor. Asking for an unshipped agent by name is an error rather than a pod that cannot start.

Nobody publishes the agents image for you, so our agents run only where an image exists: `image` names one you
pushed (`make image`, then push it), or `build` has the stack build the package's Dockerfile and push it to an
Azure Container Registry (`gpu_operator.components.AgentsImage`). Without either, every operand runs NVIDIA's
published image, as the chart does; asking for agents without an image is an error that names both fixes. With an
image, `implementation` (default `agents`) and per-operand `overrides` choose between ours and NVIDIA's.
:func:`choose_implementation` makes that choice, with its reason, for the render and for the summary alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from gpu_operator import __version__
from gpu_operator.config.aks import check_resource_group
from gpu_operator.config.base import ConfigModel
from gpu_operator.config.clusterpolicy.common import DIGEST_PATTERN
from gpu_operator.config.clusterpolicy.image_reference import check_path, check_repository, check_tag_or_digest
from gpu_operator.config.kube import DnsSubdomain, ImagePullPolicy

__all__ = [
    "AGENT_OPERANDS",
    "AgentChoice",
    "AgentOperand",
    "AgentsBuild",
    "AgentsConfig",
    "AgentsImage",
    "AgentsRegistry",
    "Implementation",
    "SHIPPED_AGENTS",
    "choose_implementation",
]

Implementation = Literal["agents", "nvidia"]
AgentOperand = Literal[
    "gfd", "dcgmExporter", "devicePlugin", "migManager", "validator", "nodeStatusExporter", "driverManager",
    "healthMonitor",
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
    "healthMonitor": "health-monitor",
}

#: Sections whose agent the agents image of this release contains.
SHIPPED_AGENTS: frozenset[str] = frozenset(
    {"gfd", "dcgmExporter", "devicePlugin", "migManager", "validator", "nodeStatusExporter", "driverManager",
     "healthMonitor"}
)

# ACR names: 5-50 letters and digits (https://aka.ms/acr/naming); the login server is the lower-cased name.
_ACR_NAME = re.compile(r"^[A-Za-z0-9]{5,50}\Z")
_NEEDS_IMAGE = (
    "needs the agents image, which nobody publishes for you: set agents.image to an image you pushed "
    "(build it with `make image`), or agents.build to have the stack build and push it"
)


def _check_repository(value: str, *, domain_allowed: bool) -> str:
    """A repository by the distribution reference grammar; with `domain_allowed`, a registry host may lead."""
    if domain_allowed:
        check_repository(value)
    else:
        check_path(value, "image repository")
    return value


def _check_tag(value: str) -> str:
    if value.startswith("sha256:"):
        raise ValueError(f"{value!r} is a digest: give it as `digest`, and keep `tag` for a tag")
    check_tag_or_digest(value)
    return value


class AgentsImage(ConfigModel):
    """An agents image you pushed: repository plus a tag, a digest, or both (the digest wins)."""

    repository: str = Field(description="registry and repository, e.g. myregistry.azurecr.io/gpu-operator-agents")
    tag: str = Field(default=__version__, description="default: this package's version")
    digest: str = ""
    pull_policy: ImagePullPolicy = "IfNotPresent"
    pull_secrets: tuple[DnsSubdomain, ...] = ()

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        return _check_repository(value, domain_allowed=True)

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        return _check_tag(value)

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


class AgentsRegistry(ConfigModel):
    """The Azure Container Registry the stack pushes the agents image to: an existing one, or one it creates."""

    resource_group: str
    name: str = Field(description="the registry's name (5-50 letters and digits); login server <name>.azurecr.io")
    create: bool = Field(default=False, description="create the registry (admin user enabled, for the push)")
    sku: Literal["Basic", "Standard", "Premium"] = "Basic"
    location: str | None = Field(default=None, description="with create; default: the resource group's location")

    @field_validator("resource_group")
    @classmethod
    def _resource_group(cls, value: str) -> str:
        return check_resource_group(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _ACR_NAME.match(value):
            raise ValueError(f"{value!r} is not an Azure Container Registry name (5-50 letters and digits)")
        return value

    @model_validator(mode="after")
    def _location_only_when_created(self) -> Self:
        if self.location is not None and not self.create:
            raise ValueError("location applies only to a registry the stack creates (create: true); remove it")
        return self

    @property
    def login_server(self) -> str:
        return f"{self.name.lower()}.azurecr.io"


class AgentsBuild(ConfigModel):
    """Build the agents image from the package's Dockerfile during `pulumi up` and push it to `registry`.

    The operands reference the pushed image by digest; the AKS cluster's kubelet identity gets `AcrPull` on the
    registry, so no pull secret is needed.
    """

    registry: AgentsRegistry
    repository: str = "gpu-operator-agents"
    tag: str = Field(default=__version__, description="default: this package's version")
    context: str = Field(
        default="", description="directory holding the Dockerfile and the package source (default: this package's)"
    )

    @field_validator("repository")
    @classmethod
    def _repository(cls, value: str) -> str:
        return _check_repository(value, domain_allowed=False)

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        return _check_tag(value)

    @property
    def image(self) -> AgentsImage:
        """The pushed image by tag: what the render references until the build's digest is known."""
        return AgentsImage(repository=f"{self.registry.login_server}/{self.repository}", tag=self.tag)


class AgentsConfig(ConfigModel):
    """Where the agents image comes from and, per operand, whose implementation runs."""

    configured_image: AgentsImage | None = Field(
        default=None, alias="image", description="an agents image you pushed (see `make image`)"
    )
    build: AgentsBuild | None = Field(default=None, description="build and push the agents image with the stack")
    implementation: Implementation | None = Field(
        default=None, description="for every shipped agent; default agents with an image or build, else nvidia"
    )
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

    @model_validator(mode="after")
    def _image_exists(self) -> Self:
        if self.configured_image is not None and self.build is not None:
            raise ValueError(
                "image and build both name the agents image: keep image (one you pushed) or build (the stack "
                "builds and pushes it), not both"
            )
        if self.image_source is None:
            asked = [f"overrides.{s}" for s, choice in sorted(self.overrides.items()) if choice == "agents"]
            if self.implementation == "agents":
                asked.insert(0, "implementation")
            if asked:
                raise ValueError(f"agents ({', '.join(asked)}) {_NEEDS_IMAGE}; or remove the agents choice")
        return self

    @property
    def image_source(self) -> str | None:
        """Which key provides the agents image (`agents.image` or `agents.build`), or None."""
        if self.configured_image is not None:
            return "agents.image"
        if self.build is not None:
            return "agents.build"
        return None

    @property
    def image(self) -> AgentsImage:
        """The agents image the operands reference (a built image by its tag until the build's digest is known)."""
        if self.configured_image is not None:
            return self.configured_image
        if self.build is not None:
            return self.build.image
        raise LookupError(f"no agents image is configured: an operand that {_NEEDS_IMAGE}")

    def implementation_of(self, operand: str) -> Implementation:
        """Which implementation runs `operand` (a ClusterPolicy section name or `driverManager`)."""
        return choose_implementation(self, operand).implementation


@dataclass(frozen=True)
class AgentChoice:
    """Whose program runs an operand, and why (`nvidia: no agents image configured`)."""

    implementation: Implementation
    reason: str

    def __str__(self) -> str:
        return f"{self.implementation}: {self.reason}"


def choose_implementation(agents: AgentsConfig, section: str | None) -> AgentChoice:
    """Whose program runs the operand of ClusterPolicy `section` (None: an operand no agent is designed for)."""
    if section is None or section not in AGENT_OPERANDS:
        return AgentChoice("nvidia", "no agent for this operand")
    if section not in SHIPPED_AGENTS:
        return AgentChoice("nvidia", "no agent shipped for this operand")
    # the user's own choice first: an explicit `nvidia` is said as such, with or without an agents image
    if section in agents.overrides:
        return AgentChoice(agents.overrides[section], f"override (agents.overrides.{section})")  # type: ignore[index]
    if agents.implementation == "nvidia":
        return AgentChoice("nvidia", "implementation nvidia (agents.implementation)")
    source = agents.image_source
    if source is None:
        return AgentChoice("nvidia", "no agents image configured")
    return AgentChoice("agents", source)
