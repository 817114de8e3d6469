"""`AgentsImage`: the agents image built from this package's Dockerfile, pushed to an Azure Container Registry.

Nobody publishes the agents image, so a stack that runs our agents builds it (`agents.build`): the package's own
`Dockerfile` (build context: the package source tree, or `agents.build.context`) is built for linux/amd64 with
`pulumi-docker-build` and pushed to the registry `agents.build.registry` names, an existing one or one created
here. The push authenticates with the registry's admin credentials (`listRegistryCredentials`); a registry created
here has its admin user enabled for that. The AKS kubelet identity gets `AcrPull` on the registry, so nodes pull
without a pull secret.

`image_ref` is the pushed image by digest (`<login server>/<repository>@sha256:...`): a rebuilt image is a new
reference, so the DaemonSets roll exactly when the image changes. The render stays pure and references the image by
its tag (`AgentsBuild.image`); :func:`substitute` swaps that reference for the digest Output in the rendered objects
before they are registered (`GpuOperator`'s `agents_image`).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, NotRequired, TypedDict
from collections.abc import Mapping

import pulumi
import pulumi_azure_native as azure_native
import pulumi_docker_build as docker_build
from pulumi_azure_native import authorization, containerregistry, containerservice

import gpu_operator
from gpu_operator.components.component_args import required
from gpu_operator.components.substitution import substitute
from gpu_operator.config.agents import AgentsBuild
from gpu_operator.config.errors import ConfigError, Problem

__all__ = [
    "ACR_PULL_ROLE",
    "AgentsImage",
    "AgentsImageArgs",
    "PLATFORM",
    "TOKEN",
    "acr_pull_role_definition_id",
    "build_context",
    "cluster_kubelet_object_id",
    "dockerfile_sources",
    "kubelet_object_id",
    "substitute",
]

TOKEN = "gpu-operator:index:AgentsImage"
#: The built-in AcrPull role (pull images from a container registry).
ACR_PULL_ROLE = "7f951dda-4ed3-4680-a7ca-43fe172d538d"
#: AKS GPU nodes are x86-64.
PLATFORM = docker_build.Platform.LINUX_AMD64
#: The package source tree: the folder holding `gpu_operator/` (and, in a checkout, the Dockerfile).
PACKAGE_SOURCE = Path(gpu_operator.__file__).resolve().parent.parent
_SUBSCRIPTION = re.compile(r"^(/subscriptions/[^/]+)/", re.IGNORECASE)

def dockerfile_sources(dockerfile: Path) -> list[str]:
    """The build-context paths the Dockerfile's `COPY`/`ADD` lines read (those without `--from`)."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    sources: list[str] = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        flags = [w for w in words[1:] if w.startswith("--")]
        if any(flag.startswith("--from") for flag in flags):
            continue
        paths = [w for w in words[1:] if not w.startswith("--")]
        sources += paths[:-1]
    return sources


def build_context(build: AgentsBuild) -> Path:
    """The build context: `agents.build.context`, or the package source tree; checked against the Dockerfile."""
    where = "agents.build.context"
    context = Path(build.context).expanduser().resolve() if build.context else PACKAGE_SOURCE
    dockerfile = context / "Dockerfile"
    if not dockerfile.is_file():
        fix = ("set it to a checkout of pulumi-gpu-operator" if build.context else
               "this installation has no source tree; set agents.build.context to a checkout of pulumi-gpu-operator")
        raise ConfigError([Problem(where, f"no Dockerfile in {context}: {fix}")])
    missing = [source for source in dockerfile_sources(dockerfile) if not (context / source).exists()]
    if missing:
        raise ConfigError([Problem(where, f"the Dockerfile copies {', '.join(missing)}, missing from {context}: "
                                          "point agents.build.context at a complete checkout")])
    return context


def acr_pull_role_definition_id(scope: str) -> str:
    """The AcrPull role definition in the subscription of `scope` (a resource id)."""
    match = _SUBSCRIPTION.match(scope)
    if match is None:
        raise ValueError(f"{scope!r} is not an Azure resource id (/subscriptions/<id>/...)")
    return f"{match.group(1)}/providers/Microsoft.Authorization/roleDefinitions/{ACR_PULL_ROLE}"


def kubelet_object_id(identity_profile: Mapping[str, Any] | None) -> str:
    """The object id of an AKS cluster's kubelet identity (`identityProfile.kubeletidentity.objectId`)."""
    identity = (identity_profile or {}).get("kubeletidentity")
    object_id = getattr(identity, "object_id", None)  # the SDK's output type
    if object_id is None and isinstance(identity, Mapping):
        object_id = identity.get("objectId")
    if not object_id:
        raise ValueError("the AKS cluster has no kubelet identity (identityProfile.kubeletidentity): AcrPull can only "
                         "be granted on a cluster with a managed identity")
    return str(object_id)


def cluster_kubelet_object_id(
    resource_group_name: pulumi.Input[str],
    cluster_name: pulumi.Input[str],
    azure: azure_native.Provider,
    parent: pulumi.Resource | None = None,
) -> pulumi.Output[str]:
    """The kubelet identity's object id of an AKS cluster, looked up once the cluster (name) resolves."""
    cluster = containerservice.get_managed_cluster_output(
        resource_group_name=resource_group_name,
        resource_name=cluster_name,
        opts=pulumi.InvokeOutputOptions(parent=parent, provider=azure),
    )
    return cluster.identity_profile.apply(kubelet_object_id)


class AgentsImageArgs(TypedDict):
    """Inputs of an AgentsImage."""

    build: AgentsBuild | Mapping[str, Any]
    """The `agents.build` section: registry, repository, tag and build context."""
    azure_provider: azure_native.Provider
    """The Azure provider for the registry, its credentials and the role assignment."""
    kubelet_object_id: NotRequired[pulumi.Input[str]]
    """Object id of the AKS kubelet identity that gets AcrPull on the registry (omit to grant pull access yourself)."""
    docker_provider: NotRequired[docker_build.Provider]
    """The docker-build provider (default: the default provider, which uses the local Docker daemon)."""


class AgentsImage(pulumi.ComponentResource):
    """The agents image, built, pushed and pullable by the cluster."""

    image_ref: pulumi.Output[str]
    """The pushed image by digest: `<login server>/<repository>@sha256:...`."""
    tag_reference: str
    """The pushed image by tag, as the render references it."""
    login_server: pulumi.Output[str]
    registry: containerregistry.Registry | None
    """The registry, when created here."""
    image: docker_build.Image
    role_assignment: authorization.RoleAssignment | None

    def __init__(self, name: str, args: AgentsImageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        component = f"AgentsImage({name!r})"
        azure = required(args, "azure_provider", azure_native.Provider, component, "a pulumi_azure_native.Provider")
        raw = required(args, "build", (AgentsBuild, Mapping), component, "the agents.build section")
        try:
            build = raw if isinstance(raw, AgentsBuild) else AgentsBuild.model_validate(dict(raw))
        except ValueError as error:
            raise ConfigError([Problem("agents.build", str(error))]) from None
        context = build_context(build)
        super().__init__(TOKEN, name, {}, opts)
        on_azure = pulumi.ResourceOptions(parent=self, provider=azure)
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=azure)
        registry = build.registry
        self.registry = None
        if registry.create:
            self.registry = containerregistry.Registry(
                f"{name}-registry",
                resource_group_name=registry.resource_group,
                registry_name=registry.name,
                sku={"name": registry.sku},
                admin_user_enabled=True,
                location=registry.location,
                opts=on_azure,
            )
            registry_name: pulumi.Output[str] = self.registry.name
            login_server: pulumi.Output[str] = self.registry.login_server
            registry_id: pulumi.Output[str] = self.registry.id
        else:
            existing = containerregistry.get_registry_output(
                registry_name=registry.name, resource_group_name=registry.resource_group, opts=invoke
            )
            registry_name = pulumi.Output.from_input(registry.name)
            login_server = existing.login_server
            registry_id = existing.id
        credentials = containerregistry.list_registry_credentials_output(
            registry_name=registry_name, resource_group_name=registry.resource_group, opts=invoke
        )
        repository = build.repository
        self.tag_reference = build.image.reference
        self.login_server = login_server
        self.image = docker_build.Image(
            f"{name}-image",
            context={"location": str(context)},
            dockerfile={"location": str(context / "Dockerfile")},
            platforms=[PLATFORM],
            build_args={"VERSION": gpu_operator.__version__},
            tags=[login_server.apply(lambda server: f"{server}/{repository}:{build.tag}")],
            push=True,
            # a preview needs no Docker daemon; the build runs during `pulumi up`
            build_on_preview=False,
            registries=[{
                "address": login_server,
                "username": credentials.username,
                "password": pulumi.Output.secret(credentials.passwords.apply(_first_password)),
            }],
            opts=pulumi.ResourceOptions(parent=self, provider=args.get("docker_provider")),
        )
        self.image_ref = pulumi.Output.all(login_server, self.image.digest).apply(
            lambda resolved: _by_digest(resolved[0], repository, resolved[1])
        )
        self.role_assignment = None
        principal = args.get("kubelet_object_id")
        if principal is not None:
            self.role_assignment = authorization.RoleAssignment(
                f"{name}-acr-pull",
                principal_id=principal,
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                role_definition_id=registry_id.apply(acr_pull_role_definition_id),
                scope=registry_id,
                opts=on_azure,
            )
        self.register_outputs({"imageRef": self.image_ref, "loginServer": self.login_server})


def _first_password(passwords: Any) -> str:
    for password in passwords or []:
        value = getattr(password, "value", None)
        if value is None and isinstance(password, Mapping):
            value = password.get("value")
        if value:
            return str(value)
    raise ValueError("the registry returned no admin password: enable its admin user (az acr update --admin-enabled "
                     "true) so the stack can push the agents image")


def _by_digest(login_server: str, repository: str, digest: str) -> str:
    if not digest:
        raise ValueError(f"the agents image was not pushed to {login_server}/{repository} (no digest)")
    return f"{login_server}/{repository}@{digest}"
