"""state-mps-control-daemon: `nvidia-device-plugin-mps-control-daemon`, the CUDA MPS server behind MPS sharing.

When a node's device-plugin config shares GPUs through MPS (`sharing.mps`), GPU feature discovery labels the node
`nvidia.com/mps.capable=true`; this DaemonSet schedules only there (and only where the device plugin runs). Its
`mps-control-daemon-mounts` init container mounts a tmpfs at `<mps.root>/shm` on the host (hence the
Bidirectional mount), then `mps-control-daemon` starts one MPS control daemon per GPU, with pipes and logs under
`devicePlugin.mps.root`, which the device plugin mounts too and hands to client containers. `hostPID` lets MPS see
its clients' processes.

It is rendered whenever the device plugin is enabled, and it always runs NVIDIA's device-plugin image: there is
no agent for it. It takes the device plugin's image, pull policy, pull secrets and resources, but not its `args`,
`env` or `hostNetwork`. It reads the same plugin config (and the sidecar signals `/usr/bin/mps-control-daemon`).

The pods run as the device plugin's ServiceAccount `nvidia-device-plugin`, as upstream. Upstream also creates a
ServiceAccount, ClusterRole and ClusterRoleBinding named after this DaemonSet (nodes get/list/watch) that no pod
uses, and a Role granting only OpenShift's `privileged` SCC; we render none of them (least privilege: an unused
account bound to a ClusterRole is only attack surface).
"""

from __future__ import annotations

import posixpath

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import (
    Object,
    daemonset,
    deploy_selector,
    env,
    host_path,
    mount,
    privileged,
)
from gpu_operator.render.operands.common import apply_runtime_class, node_name_env, toolkit_validation_init
from gpu_operator.render.operands.device_plugin import SERVICE_ACCOUNT
from gpu_operator.render.operands.plugin_config import (
    add_config_manager_init,
    add_config_manager_sidecar,
    add_plugin_config,
    mig_env,
)
from gpu_operator.render.transforms import finalize_daemonset, merge_env

__all__ = ["STATE", "KEY", "NAME", "CONTAINER", "MPS_CAPABLE_LABEL", "render"]

STATE = "state-mps-control-daemon"
KEY = "mps_control_daemon"
NAME = "nvidia-device-plugin-mps-control-daemon"
CONTAINER = "mps-control-daemon-ctr"
MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"


def _daemon_container(ctx: RenderContext, name: str, command: list[str], mounts: list[Object]) -> Object:
    plugin = ctx.spec.device_plugin
    return {
        "name": name,
        "image": image_path(plugin),
        "imagePullPolicy": plugin.image_pull_policy,
        "command": command,
        "securityContext": privileged(),
        "volumeMounts": mounts,
    }


def _main_container(ctx: RenderContext) -> Object:
    container = _daemon_container(
        ctx, CONTAINER, ["mps-control-daemon"], [mount("mps-shm", "/dev/shm"), mount("mps-root", "/mps")]
    )
    container["env"] = [
        node_name_env(),
        env("NVIDIA_VISIBLE_DEVICES", "all"),
        env("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
    ]
    return container


def _device_plugin_settings(ctx: RenderContext, pod: Object) -> None:
    """The part of the device plugin's section NVIDIA applies here: pull secrets, and resources on containers."""
    plugin = ctx.spec.device_plugin
    if plugin.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": secret} for secret in plugin.image_pull_secrets]
    if plugin.resources is not None:
        for container in pod["containers"]:
            container["resources"] = plugin.resources.model_dump(exclude_none=True)


def _daemonset(ctx: RenderContext) -> Object:
    mps_root = ctx.spec.device_plugin.mps.root
    main = _main_container(ctx)
    pod: Object = {
        "nodeSelector": {**deploy_selector("device-plugin"), MPS_CAPABLE_LABEL: "true"},
        "serviceAccountName": SERVICE_ACCOUNT,
        "hostPID": True,
        "initContainers": [
            toolkit_validation_init("run-nvidia", "/run/nvidia"),
            _daemon_container(
                ctx,
                "mps-control-daemon-mounts",
                ["mps-control-daemon", "mount-shm"],
                [mount("mps-root", "/mps", propagation="Bidirectional")],
            ),
        ],
        "containers": [main],
        "volumes": [
            host_path("run-nvidia", "/run/nvidia", "Directory"),
            host_path("mps-root", mps_root, "DirectoryOrCreate"),
            host_path("mps-shm", posixpath.join(mps_root, "shm")),
        ],
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    # before the sidecar joins: NVIDIA annotates only the daemon container for NRI injection
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    add_config_manager_init(ctx, pod, None)
    add_config_manager_sidecar(ctx, pod, None, process="/usr/bin/mps-control-daemon")
    add_plugin_config(ctx, pod, main)
    merge_env(main, mig_env(ctx))
    _device_plugin_settings(ctx, pod)
    return finalize_daemonset(ctx, ds, section=None, spec=None, main_container=CONTAINER)


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.device_plugin.enabled:
        return []
    return [_daemonset(ctx)]
