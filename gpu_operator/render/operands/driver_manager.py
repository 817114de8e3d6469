"""The `k8s-driver-manager` init container that prepares a node before a driver (or vfio/vGPU) pod starts.

It unloads an old driver, evicts or drains GPU pods when asked, and pauses the other operands through their
`nvidia.com/gpu.deploy.*` labels meanwhile (see the reference's §9.2). The driver, vGPU manager and vfio
manager DaemonSets all start with it; they differ only in whether GPU-pod eviction is on. Our agent implements
the same program as `gpu-operator-agent driver-manager uninstall_driver`, reading the same env; it stays
privileged and states `runAsUser: 0`, since the agents image's own user is not root.
"""

from __future__ import annotations

from gpu_operator.config.clusterpolicy.driver import DriverManagerSpec
from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, env, env_field, mount, privileged, rule
from gpu_operator.render.operands.agent_security import secure_agent
from gpu_operator.render.operands.common import node_name_env
from gpu_operator.render.transforms import merge_env

__all__ = ["AGENT_RULES", "driver_manager_init", "driver_manager_volumes_needed", "manager_rules", "pull_secrets_of",
           "SECTION"]

#: The agent section name that selects our implementation or NVIDIA's.
SECTION = "driverManager"
#: Exactly what our driver manager calls (gpu_operator/agents/driver_manager/kube.py): read and merge-patch its
#: node (labels, cordon), list the pods on it, read the ResourceClaims they hold (a pod with a claim of NVIDIA's
#: DRA driver is a GPU pod), evict them. Tighter than NVIDIA's: no node list/watch/update, no pod get/watch (one
#: list by `spec.nodeName` per look), no DaemonSet reads (a pod's DaemonSet is known from its owner reference),
#: no ResourceClaim list (each claim is read by name).
AGENT_RULES = [
    rule([""], ["nodes"], ["get", "patch"]),
    rule([""], ["pods"], ["list"]),
    rule([""], ["pods/eviction"], ["create"]),
    rule(["resource.k8s.io"], ["resourceclaims"], ["get"]),
]


def manager_rules(ctx: RenderContext, nvidia_rules: list[Object]) -> list[Object]:
    """The ClusterRole rules of a DaemonSet whose init container is the driver manager: ours, or NVIDIA's."""
    return AGENT_RULES if ctx.uses_agent(SECTION) else nvidia_rules


def _command(ctx: RenderContext) -> tuple[list[str], list[str]]:
    if ctx.uses_agent(SECTION):
        return ctx.agent_command(SECTION), ["uninstall_driver"]
    return ["driver-manager"], ["uninstall_driver"]


def driver_manager_init(
    ctx: RenderContext,
    spec: DriverManagerSpec,
    *,
    gpu_pod_eviction: bool = True,
    extra_env: list[Object] | None = None,
) -> Object:
    """The init container, with NVIDIA's default env, then `extra_env`, then the user's `manager.env`."""
    command, args = _command(ctx)
    uses_agent = ctx.uses_agent(SECTION)
    container: Object = {
        "name": "k8s-driver-manager",
        "image": ctx.config.agents.image.reference if uses_agent else image_path(spec),
        "imagePullPolicy": ctx.config.agents.image.pull_policy if uses_agent else spec.image_pull_policy,
        "command": command,
        "args": args,
        "env": [
            node_name_env(),
            env("NVIDIA_VISIBLE_DEVICES", "void"),
            env("ENABLE_GPU_POD_EVICTION", gpu_pod_eviction),
            env("ENABLE_AUTO_DRAIN", False),
            env("DRAIN_USE_FORCE", False),
            env("DRAIN_POD_SELECTOR_LABEL", ""),
            env("DRAIN_TIMEOUT_SECONDS", "0s"),
            env("DRAIN_DELETE_EMPTYDIR_DATA", False),
            env_field("OPERATOR_NAMESPACE", "metadata.namespace"),
        ],
        "securityContext": privileged(),
        "volumeMounts": [
            mount("run-nvidia", "/run/nvidia", propagation="Bidirectional"),
            mount("host-root", "/host", read_only=True, propagation="HostToContainer"),
            mount("host-sys", "/sys"),
            mount("run-mellanox-drivers", "/run/mellanox/drivers", propagation="HostToContainer"),
        ],
    }
    merge_env(container, extra_env or [])
    merge_env(container, spec.env)
    secure_agent(ctx, SECTION, container)
    return container


def driver_manager_volumes_needed() -> tuple[str, ...]:
    """Volume names the init container mounts; the pod must define them."""
    return ("run-nvidia", "host-root", "host-sys", "run-mellanox-drivers")


def pull_secrets_of(ctx: RenderContext, spec: DriverManagerSpec) -> tuple[str, ...]:
    """Pull secrets the pod needs for this init container's image."""
    if ctx.uses_agent(SECTION):
        return ctx.config.agents.image.pull_secrets
    return spec.image_pull_secrets
