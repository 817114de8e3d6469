"""Least privilege for our agents: each agent container gets what its program needs from the node, and no more.

NVIDIA runs every operand container `privileged: true`. Our agents do a known, small set of things, so when an
agent implements a section its container's securityContext comes from :data:`AGENT_PRIVILEGES` (and, for the
validator's checks, :data:`VALIDATOR_CHECKS`):

* **user**: root (uid 0) only where the agent writes a root-owned host path or dials a root-only kubelet socket;
  otherwise the agents image's own non-root user (:data:`AGENTS_IMAGE_USER`, the `USER` of the Dockerfile). The
  image's user is not root, so every agent container states its user, privileged ones included.
* **GPUs** come through the NVIDIA runtime (runtime class, or CDI annotations with the NRI plugin) from
  `NVIDIA_VISIBLE_DEVICES=all`, not from `privileged`. The agents image asks for no GPU (`void`, like NVIDIA's
  validator image), so a row names the runtime requests that NVIDIA's own image for that program makes in its ENV.
* **capabilities**: all dropped, then only those a row names. The NVIDIA runtime treats a container holding
  CAP_SYS_ADMIN as privileged and honours MIG config/monitor device requests only there, so a container asking for
  them (:data:`ADMIN_ONLY_REQUESTS`, e.g. `NVIDIA_MIG_MONITOR_DEVICES=all` under a MIG strategy) gets CAP_SYS_ADMIN,
  as NVIDIA's own device-plugin chart does.
* not privileged (stated), no privilege escalation, a read-only root filesystem and the runtime's default seccomp
  profile.

`privileged: true` stays where the program needs what only a privileged container has: the host's device nodes
(the host's `nvidia-smi` under `chroot`), kernel modules, MIG reconfiguration and GPU resets, and mounts shared
back to the host. A container that drops `privileged` also cannot keep `Bidirectional` mount propagation (the API
server refuses it); those mounts only carry status files, so they become `HostToContainer`.

With implementation `nvidia` nothing here applies: NVIDIA's security contexts are rendered as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpu_operator.config.kube import EnvVar
from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object

__all__ = [
    "AGENTS_IMAGE_USER",
    "ROOT",
    "Privileges",
    "AGENT_PRIVILEGES",
    "VALIDATOR_CHECKS",
    "CONFIG_MANAGER",
    "HEALTH_HOST_ACTIONS",
    "STATUS_FILE_WAIT",
    "ADMIN_ONLY_REQUESTS",
    "security_context",
    "secure_agent",
    "secure_check",
    "secure_config_managers",
    "secure_host_actions",
    "secure_status_wait",
]

#: The agents image's `USER` (uid and gid); tests/test_dockerfile.py checks the Dockerfile agrees.
AGENTS_IMAGE_USER = 65532
ROOT = 0

_GPUS = (("NVIDIA_VISIBLE_DEVICES", "all"),)
_SYS_ADMIN = "SYS_ADMIN"
_CONFIG_MANAGER_NAMES = ("config-manager-init", "config-manager")
_SHARED_BACK = "Bidirectional"
_HOST_TO_CONTAINER = "HostToContainer"


@dataclass(frozen=True, slots=True)
class Privileges:
    """What one agent container needs from its node, and why."""

    user: int
    reason: str
    privileged: bool = False
    capabilities: tuple[str, ...] = ()
    runtime_env: tuple[tuple[str, str], ...] = ()


#: ClusterPolicy section → the privileges of the container running our agent for it.
AGENT_PRIVILEGES: Mapping[str, Privileges] = MappingProxyType({
    "gfd": Privileges(
        ROOT,
        "writes NFD's features.d file in a root-owned host directory; reads GPUs through NVML; the vGPU labels need "
        "the full PCI config space, which sysfs shows only to CAP_SYS_ADMIN",
        capabilities=(_SYS_ADMIN,),
        runtime_env=_GPUS,
    ),
    "dcgmExporter": Privileges(
        ROOT,
        "dials the kubelet's pod-resources socket (root only); reads GPUs through NVML; the profiling fields read GPU "
        "performance counters, which the driver restricts to CAP_SYS_ADMIN (NVIDIA's exporter chart adds it too); "
        "reads MIG GPU and compute instances, which NVML answers only with the MIG monitor capability the runtime "
        "mounts for NVIDIA_MIG_MONITOR_DEVICES=all (NVIDIA's exporter is privileged instead)",
        capabilities=(_SYS_ADMIN,),
        runtime_env=(*_GPUS, ("NVIDIA_MIG_MONITOR_DEVICES", "all")),
    ),
    "devicePlugin": Privileges(
        ROOT,
        "serves and registers sockets in the kubelet's device-plugins directory and writes CDI specs under "
        "/var/run/cdi (root-owned); reads GPUs through NVML, which its env already requests",
    ),
    "nodeStatusExporter": Privileges(
        ROOT,
        "re-runs the driver check every minute: the host's nvidia-smi under chroot needs the host's device nodes",
        privileged=True,
    ),
    "migManager": Privileges(
        ROOT,
        "switches MIG mode and creates GPU instances, resets GPUs, stops host GPU services and may reboot the node",
        privileged=True,
        runtime_env=(*_GPUS, ("NVIDIA_MIG_CONFIG_DEVICES", "all")),
    ),
    "driverManager": Privileges(
        ROOT,
        "unloads the driver's kernel modules and shares /run/nvidia back to the host",
        privileged=True,
    ),
    "validator": Privileges(
        ROOT,
        "the validator pods' main container holds the status files and removes them on stop "
        "(/run/nvidia/validations is root-owned)",
    ),
    "healthMonitor": Privileges(
        AGENTS_IMAGE_USER,
        "reads GPUs through NVML and the validator's status files, and talks to the API server; GPU resets and "
        "reboots go through its pod's privileged host-actions helper",
        runtime_env=_GPUS,
    ),
})

#: An init container of ours that only waits for a status file of the validator (root-owned, world-readable).
STATUS_FILE_WAIT = Privileges(ROOT, "waits until a status file of the validator exists")

#: The health monitor's host-actions helper: GPU resets and reboots in the host's root, nothing else.
HEALTH_HOST_ACTIONS = Privileges(
    ROOT,
    "resets GPUs (the host's nvidia-smi on the host's device nodes) and reboots the node, as the MIG manager does",
    privileged=True,
)

#: Validator check (`COMPONENT`) → the privileges of its init container.
VALIDATOR_CHECKS: Mapping[str, Privileges] = MappingProxyType({
    "driver": Privileges(
        ROOT,
        "runs the host's (or the driver container's) nvidia-smi on the host's device nodes, loads modules and "
        "creates /dev/char links on the host",
        privileged=True,
    ),
    "toolkit": Privileges(
        ROOT,
        "runs nvidia-smi in its own container through the NVIDIA runtime and writes toolkit-ready",
    ),
    "cuda": Privileges(ROOT, "starts the CUDA workload pod through the API server and writes cuda-ready"),
    "plugin": Privileges(ROOT, "reads its Node's allocatable GPUs from the API server and writes plugin-ready"),
    "vfio-pci": Privileges(ROOT, "inspects the host's PCI driver bindings", privileged=True),
    "vgpu-manager": Privileges(ROOT, "runs the host's vGPU manager nvidia-smi on host devices", privileged=True),
    "vgpu-devices": Privileges(ROOT, "inspects the host's vGPU devices", privileged=True),
    "cc-manager": Privileges(ROOT, "inspects the host's confidential-computing mode", privileged=True),
})

#: `config-manager-init`: reads its Node and the configs volume, writes the selected file into an emptyDir.
CONFIG_MANAGER = Privileges(
    AGENTS_IMAGE_USER,
    "reads its Node's config label and the mounted configs, writes the selected one into a shared emptyDir",
)

#: NVIDIA runtime requests honoured only in containers holding CAP_SYS_ADMIN: env name → does this value ask?
ADMIN_ONLY_REQUESTS: Mapping[str, Callable[[str], bool]] = MappingProxyType({
    "NVIDIA_MIG_CONFIG_DEVICES": bool,
    "NVIDIA_MIG_MONITOR_DEVICES": bool,
    # clusters using this strategy normally make the runtime ignore NVIDIA_VISIBLE_DEVICES from unprivileged
    # containers, which would hide the GPUs from the plugin itself (NVIDIA's chart adds SYS_ADMIN for it)
    "DEVICE_LIST_STRATEGY": lambda value: "volume-mounts" in value,
})


def _env_values(container: Object, user_env: Iterable[EnvVar]) -> dict[str, str]:
    """The container's literal env with the user's env (merged later by the transforms) on top."""
    values = {item["name"]: item.get("value", "") for item in container.get("env", []) if "valueFrom" not in item}
    values.update({variable.name: variable.value or "" for variable in user_env})
    return values


def _requests_admin(env: Mapping[str, str]) -> bool:
    return any(name in env and asks(env[name]) for name, asks in ADMIN_ONLY_REQUESTS.items())


def security_context(privileges: Privileges, *, admin: bool = False) -> Object:
    """The securityContext for `privileges`; `admin` adds CAP_SYS_ADMIN for an admin-only runtime request."""
    if privileges.privileged:
        return {"privileged": True, "runAsUser": privileges.user}
    added = sorted({*privileges.capabilities, *((_SYS_ADMIN,) if admin else ())})
    capabilities: Object = {"drop": ["ALL"]}
    if added:
        capabilities["add"] = added
    context: Object = {"runAsUser": privileges.user, "runAsGroup": privileges.user}
    if privileges.user != ROOT:
        context["runAsNonRoot"] = True
    context.update(
        # stated, not left to the default: pulumi-kubernetes previews the first update of an object it created with
        # a client-side create before it takes over that create's fields (await.go `fixCSAFieldManagers` returns
        # early in preview), so a `privileged: true` of NVIDIA's container would survive into the dry run beside
        # allowPrivilegeEscalation false, which the API server refuses
        privileged=False,
        allowPrivilegeEscalation=False,
        readOnlyRootFilesystem=True,
        capabilities=capabilities,
        seccompProfile={"type": "RuntimeDefault"},
    )
    return context


def _apply(container: Object, privileges: Privileges, user_env: Iterable[EnvVar] = ()) -> None:
    present = {item["name"] for item in container.get("env", [])}
    missing = [{"name": name, "value": value} for name, value in privileges.runtime_env if name not in present]
    if missing:
        container.setdefault("env", []).extend(missing)
    context = security_context(privileges, admin=_requests_admin(_env_values(container, user_env)))
    kept = container.get("securityContext", {}).get("seLinuxOptions")
    if kept is not None:
        context["seLinuxOptions"] = kept
    container["securityContext"] = context
    if not privileges.privileged:
        for volume_mount in container.get("volumeMounts", []):
            if volume_mount.get("mountPropagation") == _SHARED_BACK:
                volume_mount["mountPropagation"] = _HOST_TO_CONTAINER


def secure_agent(ctx: RenderContext, section: str, container: Object, user_env: Iterable[EnvVar] = ()) -> None:
    """Give `section`'s agent container its privileges, when our agent implements `section`.

    `user_env` is the section's `env` setting, which the transforms merge later; it counts for the admin-only
    runtime requests.
    """
    if ctx.uses_agent(section):
        _apply(container, AGENT_PRIVILEGES[section], user_env)


def secure_check(ctx: RenderContext, component: str, container: Object) -> None:
    """Give a validator check's init container (`COMPONENT=component`) its privileges, when our validator runs it."""
    if ctx.uses_agent("validator"):
        _apply(container, VALIDATOR_CHECKS[component])


def secure_host_actions(ctx: RenderContext, container: Object) -> None:
    """The health monitor's host-actions helper: privileged, as root."""
    if ctx.uses_agent("healthMonitor"):
        _apply(container, HEALTH_HOST_ACTIONS)


def secure_status_wait(ctx: RenderContext, section: str, container: Object) -> None:
    """An init container of `section`'s pod that only waits for a validator status file: unprivileged, as root."""
    if ctx.uses_agent(section):
        _apply(container, STATUS_FILE_WAIT)


def secure_config_managers(ctx: RenderContext, section: str, pod: Object) -> None:
    """Our config-manager containers in `section`'s pod: the init one as the image's user, the sidecar as its owner.

    The sidecar sends SIGHUP to the owning agent, which the kernel allows only between processes of one user; it
    needs no capability for that.
    """
    if not ctx.uses_agent(section):
        return
    owner = Privileges(AGENT_PRIVILEGES[section].user, "signals the owning agent, which runs as this user")
    roles = dict(zip(_CONFIG_MANAGER_NAMES, (CONFIG_MANAGER, owner)))
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        privileges = roles.get(container["name"])
        if privileges is not None:
            _apply(container, privileges)
