"""state-health-monitor: `gpu-health-monitor`, the node agent that writes GPU faults as Node conditions and Events.

Ours alone (NVIDIA ships fault detection apart from the GPU operator, in NVSentinel): `gpu-operator-agent
health-monitor` from the agents image, on every node labelled `nvidia.com/gpu.deploy.health-monitor=true` (the
labeller's `container` workload set, :mod:`gpu_operator.labels`), once the validator wrote `toolkit-ready`. It
needs the agents image (no NVIDIA image does this): without one, or with `agents.implementation: nvidia` /
`agents.overrides.healthMonitor: nvidia`, nothing is rendered.

Least privilege, tighter than NVSentinel's monitors (root, host network, `SYS_ADMIN`):

* the monitor container runs as the agents image's non-root user, every capability dropped, a read-only root
  filesystem; it sees the GPUs through the NVIDIA runtime (`NVIDIA_VISIBLE_DEVICES=all`) and reads the
  validator's status files read-only; the init container that waits for `toolkit-ready` is unprivileged too;
* its ServiceAccount may get, watch and patch Nodes (its own Node's result annotations), patch `nodes/status`
  (its conditions), and create and patch Events in `default`, nothing else;
* the privileged `host-actions` container (root, the host's PID namespace and root filesystem: `nvidia-smi -r`
  and `reboot` in the host's root, as the MIG manager runs them) is rendered only when the remediation may ask
  this node for a GPU reset or a reboot (:func:`monitor_settings`); it holds no logic and talks to the monitor
  over a socket in a volume only the pod mounts.

The pod tolerates the remediation's fault taint (`nvidia.com/gpu-fault`, any effect), or a node the remediation
tainted would lose its monitor at the next restart, and with it the answer to the reset it asked for. While the
driver manager or the MIG manager has paused the GPU operands, the monitor closes NVML itself (an NVML client
would keep the driver from unloading and the GPUs from resetting), so it needs no pause of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import (
    Object,
    cluster_role,
    cluster_role_binding,
    daemonset,
    deploy_selector,
    empty_dir,
    env,
    host_path,
    mount,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent, secure_host_actions, secure_status_wait
from gpu_operator.render.operands.common import VALIDATIONS_DIR, node_name_env, toolkit_validation_init
from gpu_operator.render.transforms import finalize_daemonset

__all__ = [
    "DEPLOY_LABEL",
    "EVENTS_ROLE",
    "FAULT_TAINT_KEY",
    "HOST_ACTIONS",
    "KEY",
    "MONITOR",
    "MonitorSettings",
    "NAME",
    "SOCKET",
    "STATE",
    "monitor_settings",
    "render",
]

STATE = "state-health-monitor"
KEY = "health_monitor"
SECTION = "healthMonitor"
NAME = "gpu-health-monitor"
DEPLOY_LABEL = "health-monitor"
MONITOR = "health-monitor"
HOST_ACTIONS = "host-actions"
EVENTS_ROLE = f"{NAME}-events"
EVENT_NAMESPACE = "default"
SOCKET_DIR = "/run/gpu-health-monitor"
POD_RESOURCES = "pod-resources"
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
SOCKET = f"{SOCKET_DIR}/host-actions.sock"
#: The remediation's default taint key (issue 26's design page); the pod tolerates it with any effect.
FAULT_TAINT_KEY = "nvidia.com/gpu-fault"
LABELS = {"app": NAME, "app.kubernetes.io/component": NAME}


@dataclass(frozen=True, slots=True)
class MonitorSettings:
    """What the config says about the monitor. `node_actions`: the remediation may ask for a GPU reset or a reboot
    on this node's own host (not through a cloud API), which needs the privileged helper."""

    node_actions: bool = False
    startup_grace_seconds: int = 120
    health_interval_seconds: int = 10
    reset_idle_timeout_seconds: int = 60
    fault_taint_key: str = FAULT_TAINT_KEY
    xid_ignore: tuple[int, ...] = ()
    xid_classify: tuple[tuple[int, str], ...] = ()
    pod_resources: bool = False
    """A rule may drain only the pods of the faulty GPUs: the monitor reads the kubelet's pod-resources socket
    (root-only) to tell which pods hold them, so it runs as root (all capabilities still dropped)."""


def _resources() -> Object:
    """A fresh dict per container (a shared one would alias in YAML and in edits). The monitor holds about 70 MiB
    resident on a simulated 8-GPU node after a storm of 2,000 XIDs (measured with the agents' package)."""
    return {"requests": {"cpu": "10m", "memory": "96Mi"}, "limits": {"memory": "256Mi"}}


def monitor_settings(ctx: RenderContext) -> MonitorSettings:
    """The monitor's settings from the config's `remediation` section: the privileged helper only where a rule
    may ask this node's own host for a GPU reset or a reboot (the default `observe` asks none), the XID overrides
    (so the node writes the conditions the controller's rules expect), and the taint key it tolerates."""
    remediation = ctx.config.remediation
    policy = remediation.policy()
    return MonitorSettings(
        node_actions=bool(policy.node_agent_actions(pool.name for pool in ctx.config.pools)),
        fault_taint_key=remediation.taint.key,
        xid_ignore=tuple(sorted(policy.xids.ignore)),
        xid_classify=tuple(sorted(policy.xids.classify.items())),
        pod_resources=remediation.drains_partially(pool.name for pool in ctx.config.pools))


def _monitor(ctx: RenderContext, settings: MonitorSettings) -> Object:
    variables = [
        node_name_env(),
        env("VALIDATIONS_DIR", VALIDATIONS_DIR),
        env("STARTUP_GRACE_SECONDS", settings.startup_grace_seconds),
        env("HEALTH_INTERVAL_SECONDS", settings.health_interval_seconds),
        env("RESET_IDLE_TIMEOUT_SECONDS", settings.reset_idle_timeout_seconds),
    ]
    if settings.xid_ignore:
        variables.append(env("XID_IGNORE", ",".join(map(str, settings.xid_ignore))))
    if settings.xid_classify:
        variables.append(env("XID_CLASSIFY", ",".join(f"{code}={name}" for code, name in settings.xid_classify)))
    mounts = [mount("run-nvidia-validations", VALIDATIONS_DIR, read_only=True, propagation="HostToContainer")]
    if settings.pod_resources:
        variables.append(env("POD_RESOURCES_SOCKET", f"{POD_RESOURCES_DIR}/kubelet.sock"))
        mounts.append(mount(POD_RESOURCES, POD_RESOURCES_DIR, read_only=True))
    if settings.node_actions:
        variables.append(env("HOST_ACTIONS_SOCKET", SOCKET))
        mounts.append(mount(HOST_ACTIONS, SOCKET_DIR))
    image = ctx.config.agents.image
    container = {
        "name": MONITOR,
        "image": image.reference,
        "imagePullPolicy": image.pull_policy,
        "command": ctx.agent_command(SECTION),
        "env": variables,
        "resources": _resources(),
        "volumeMounts": mounts,
    }
    secure_agent(ctx, SECTION, container)
    if settings.pod_resources and ctx.uses_agent(SECTION):
        container["securityContext"]["runAsUser"] = 0  # the kubelet's socket is root's; no capability added
    return container


def _host_actions(ctx: RenderContext) -> Object:
    image = ctx.config.agents.image
    container = {
        "name": HOST_ACTIONS,
        "image": image.reference,
        "imagePullPolicy": image.pull_policy,
        "command": ctx.agent_command(SECTION, "--serve-host-actions"),
        "env": [env("HOST_ACTIONS_SOCKET", SOCKET), env("VALIDATIONS_DIR", VALIDATIONS_DIR)],
        "resources": _resources(),
        "volumeMounts": [
            mount(HOST_ACTIONS, SOCKET_DIR),
            mount("run-nvidia-validations", VALIDATIONS_DIR, read_only=True, propagation="HostToContainer"),
            mount("host-root", "/host", propagation="HostToContainer"),
        ],
    }
    secure_host_actions(ctx, container)
    return container


def _tolerate_fault_taint(pod: Object, key: str) -> None:
    tolerations = pod.setdefault("tolerations", [])
    covered = any(t.get("operator") == "Exists" and t.get("key") in (None, "", key) and not t.get("effect")
                  for t in tolerations)
    if not covered:
        tolerations.append({"key": key, "operator": "Exists"})


def _daemonset(ctx: RenderContext, settings: MonitorSettings) -> Object:
    containers = [_monitor(ctx, settings)]
    volumes = [host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate")]
    if settings.pod_resources:
        volumes.append(host_path(POD_RESOURCES, POD_RESOURCES_DIR, "Directory"))
    if settings.node_actions:
        containers.append(_host_actions(ctx))
        volumes += [empty_dir(HOST_ACTIONS), host_path("host-root", "/")]
    wait = toolkit_validation_init()
    secure_status_wait(ctx, SECTION, wait)
    pod: Object = {
        "nodeSelector": deploy_selector(DEPLOY_LABEL),
        "serviceAccountName": NAME,
        "initContainers": [wait],
        "containers": containers,
        "volumes": volumes,
    }
    if settings.node_actions:
        pod["hostPID"] = True  # `reboot` in the host's root talks to the host's init, not the container's
    secrets = ctx.config.agents.image.pull_secrets
    if secrets:
        pod["imagePullSecrets"] = [{"name": name} for name in secrets]
    ds = daemonset(ctx, NAME, labels=LABELS, pod_spec=pod)
    if ctx.runtime_class is not None:
        pod["runtimeClassName"] = ctx.runtime_class
    if ctx.nri_plugin:
        ds["spec"]["template"]["metadata"]["annotations"] = {
            f"nvidia.cdi.k8s.io/container.{MONITOR}": "management.nvidia.com/gpu=all"}
    finalize_daemonset(ctx, ds, section=None, spec=None, main_container=MONITOR)
    _tolerate_fault_taint(pod, settings.fault_taint_key)
    return ds


def _rbac(ctx: RenderContext) -> list[Object]:
    events_role = role(ctx, EVENTS_ROLE, [rule([""], ["events"], ["create", "patch"])], LABELS)
    events_role["metadata"]["namespace"] = EVENT_NAMESPACE
    events_binding = role_binding(ctx, EVENTS_ROLE, account=NAME, labels=LABELS)
    events_binding["metadata"]["namespace"] = EVENT_NAMESPACE
    return [
        service_account(ctx, NAME, LABELS),
        cluster_role(NAME, [
            rule([""], ["nodes"], ["get", "watch", "patch"]),
            rule([""], ["nodes/status"], ["patch"]),
        ], LABELS),
        cluster_role_binding(ctx, NAME, labels=LABELS),
        events_role,
        events_binding,
    ]


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.uses_agent(SECTION):
        return []
    return [*_rbac(ctx), _daemonset(ctx, monitor_settings(ctx))]
