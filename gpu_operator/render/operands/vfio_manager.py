"""state-vfio-manager: `nvidia-vfio-manager` binds the GPUs of passthrough nodes to `vfio-pci`.

On nodes labelled for `vm-passthrough` the GPUs must belong to `vfio-pci` rather than the NVIDIA driver, so that
KubeVirt or Kata can hand whole devices to virtual machines. The `k8s-driver-manager` init container first
unloads any NVIDIA driver (with GPU-pod eviction and node drain off, as NVIDIA sets them here); the main
container then runs `vfio-manage bind --all` from the same k8s-driver-manager image and idles, and its preStop
hook gives the devices back with `vfio-manage unbind --all`.

The pods carry the label `name=nvidia-vfio-manager` (their selector), while the DaemonSet itself is labelled
`app=nvidia-vfio-manager`, as NVIDIA does. NVIDIA's Role only grants OpenShift's `privileged` SCC, so it is not
rendered; the ClusterRole lets the driver manager cordon the node and evict pods.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, env, host_path, mount, rule
from gpu_operator.render.operands.common import SHELL
from gpu_operator.render.operands.driver_manager import manager_rules
from gpu_operator.render.operands.sandbox_common import (
    driver_manager_pull_secrets,
    operand_rbac,
    privileged_s0,
    relabel_daemonset,
    sandbox_driver_manager_init,
    sandbox_operand_enabled,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "render"]

STATE = "state-vfio-manager"
KEY = "vfio_manager"
NAME = "nvidia-vfio-manager"

_CLUSTER_RULES = [
    rule([""], ["nodes"], ["get", "list", "patch", "watch"]),
    rule([""], ["pods"], ["get", "list", "watch"]),
    rule([""], ["pods/eviction"], ["create"]),
]
#: Bind every NVIDIA GPU to vfio-pci once, then stay up so the preStop hook can undo it.
_BIND_AND_IDLE = "vfio-manage bind --all && while :; do sleep 3600; done"
_UNBIND = "vfio-manage unbind --all"


def _manager_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.vfio_manager
    return {
        "name": NAME,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "command": list(SHELL),
        "args": [_BIND_AND_IDLE],
        "env": [env("HOST_ROOT", "/host")],
        "resources": {"limits": {"memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}},
        "securityContext": privileged_s0(),
        "volumeMounts": [
            mount("host-sys", "/sys"),
            mount("host-lib-modules", "/lib/modules", read_only=True),
            mount("host-root", "/host"),
        ],
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", _UNBIND]}}},
    }


def _daemonset(ctx: RenderContext) -> Object:
    spec = ctx.spec.vfio_manager
    pod: Object = {
        "nodeSelector": deploy_selector("vfio-manager"),
        "serviceAccountName": NAME,
        "initContainers": [sandbox_driver_manager_init(ctx, spec.driver_manager)],
        "containers": [_manager_container(ctx)],
        "terminationGracePeriodSeconds": 30,
        "volumes": [
            host_path("host-sys", "/sys", "Directory"),
            host_path("host-lib-modules", "/lib/modules", "Directory"),
            host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
            host_path("host-root", "/"),
        ],
    }
    secrets = driver_manager_pull_secrets(ctx, spec.driver_manager)
    if secrets:
        pod["imagePullSecrets"] = secrets
    pod_labels = {"name": NAME}
    ds = relabel_daemonset(daemonset(ctx, NAME, labels=pod_labels, selector=pod_labels, pod_spec=pod), {"app": NAME})
    return finalize_daemonset(ctx, ds, section="vfioManager", spec=spec, main_container=NAME)


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.vfio_manager.enabled):
        return []
    return [*operand_rbac(ctx, NAME, role_rules=[], cluster_rules=manager_rules(ctx, _CLUSTER_RULES)), _daemonset(ctx)]
