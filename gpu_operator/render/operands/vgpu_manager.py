"""state-vgpu-manager: `nvidia-vgpu-manager-daemonset`, the containerized vGPU host driver.

On `vm-vgpu` nodes the NVIDIA vGPU Manager (the host driver that splits GPUs into vGPUs) runs from an image the
user builds from NVIDIA's vGPU package (`vgpuManager.repository`/`image`/`version`; nothing is published). Like
the GPU driver, its tag gets the node OS appended (`-ubuntu22.04`), so it uses the driver's pools (driver_pools):
one DaemonSet per node OS in `cluster.operatingSystems`. With a single OS it keeps NVIDIA's name; with several
each is named `nvidia-vgpu-manager-daemonset-<osTag>` and pinned to its OS by NFD's `system-os_release` labels.

The pod shares the host's PID and IPC namespaces. `k8s-driver-manager` runs first to unload any driver already
loaded (with GPU-pod eviction and node drain off, as NVIDIA sets them here); the main container
`nvidia-vgpu-manager-ctr` then runs `nvidia-driver init`, with `/dev/vfio`, the cgroup tree and the firmware
search path mounted so GSP firmware can load from the driver root. `vgpuManager.kernelModuleConfig.name` names a
ConfigMap whose `nvidia.conf` key holds `nvidia.ko` module parameters, mounted at `/drivers/nvidia.conf`.

NVIDIA's Role only grants OpenShift's `privileged` SCC and is not rendered; the ClusterRole is what the driver
manager needs to pause operands and evict pods. No runtime class: the host driver must run under runc.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.k8s import Object, daemonset, deploy_selector, host_path, mount, rule
from gpu_operator.render.operands.driver_pools import DriverPool, driver_pools, os_image
from gpu_operator.render.operands.driver_manager import manager_rules
from gpu_operator.render.operands.sandbox_common import (
    driver_manager_pull_secrets,
    operand_rbac,
    privileged_s0,
    sandbox_driver_manager_init,
    sandbox_operand_enabled,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = ["STATE", "KEY", "NAME", "SERVICE_ACCOUNT", "CONTAINER", "KERNEL_MODULE_CONFIG_KEY", "render"]

STATE = "state-vgpu-manager"
KEY = "vgpu_manager"
NAME = "nvidia-vgpu-manager-daemonset"
SERVICE_ACCOUNT = "nvidia-vgpu-manager"
CONTAINER = "nvidia-vgpu-manager-ctr"
#: The ConfigMap key holding `nvidia.ko` parameters (`options nvidia ...`), and where the driver looks for it.
KERNEL_MODULE_CONFIG_KEY = "nvidia.conf"
_DRIVERS_DIR = "/drivers"
_KERNEL_MODULE_VOLUME = "kernel-module-config"

_CLUSTER_RULES = [
    rule([""], ["nodes"], ["get", "list", "patch", "watch"]),
    rule([""], ["pods"], ["get", "list", "watch"]),
    rule([""], ["pods/eviction"], ["create"]),
    rule(["apps"], ["daemonsets"], ["get"]),
]


def _kernel_module_config(ctx: RenderContext) -> tuple[list[Object], list[Object]]:
    """(mounts, volumes) for `kernelModuleConfig`, or nothing when unset."""
    config_map = ctx.spec.vgpu_manager.kernel_module_config.name
    if not config_map:
        return [], []
    key = KERNEL_MODULE_CONFIG_KEY
    volume = {"name": _KERNEL_MODULE_VOLUME, "configMap": {"name": config_map, "items": [{"key": key, "path": key}]}}
    volume_mount = mount(_KERNEL_MODULE_VOLUME, f"{_DRIVERS_DIR}/{key}", read_only=True, sub_path=key)
    return [volume_mount], [volume]


def _manager_container(ctx: RenderContext, pool: DriverPool, extra_mounts: list[Object]) -> Object:
    spec = ctx.spec.vgpu_manager
    return {
        "name": CONTAINER,
        "image": os_image(spec, pool.os),
        "imagePullPolicy": spec.image_pull_policy,
        "command": ["nvidia-driver"],
        "args": ["init"],
        "securityContext": privileged_s0(),
        "volumeMounts": [
            mount("run-nvidia", "/run/nvidia", propagation="Bidirectional"),
            mount("host-os-release", "/host-etc/os-release"),
            mount("vfio", "/dev/vfio"),
            mount("cgroup", "/sys/fs/cgroup"),
            mount("var-log", "/var/log"),
            mount("dev-log", "/dev/log"),
            mount("firmware-search-path", "/sys/module/firmware_class/parameters/path"),
            mount("nv-firmware", "/lib/firmware"),
            *extra_mounts,
        ],
    }


def _volumes() -> list[Object]:
    return [
        host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
        host_path("host-os-release", "/etc/os-release"),
        host_path("cgroup", "/sys/fs/cgroup", "Directory"),
        host_path("vfio", "/dev/vfio", "Directory"),
        host_path("host-root", "/"),
        host_path("host-sys", "/sys", "Directory"),
        host_path("var-log", "/var/log", "Directory"),
        host_path("dev-log", "/dev/log"),
        host_path("firmware-search-path", "/sys/module/firmware_class/parameters/path"),
        host_path("nv-firmware", "/run/nvidia/driver/lib/firmware", "DirectoryOrCreate"),
    ]


def _daemonset(ctx: RenderContext, pool: DriverPool) -> Object:
    spec = ctx.spec.vgpu_manager
    module_mounts, module_volumes = _kernel_module_config(ctx)
    pod: Object = {
        # unloading the vGPU manager driver outlasts the default 30 s
        "terminationGracePeriodSeconds": 120,
        "nodeSelector": {**deploy_selector("vgpu-manager"), **pool.node_selector},
        "serviceAccountName": SERVICE_ACCOUNT,
        "hostPID": True,
        "hostIPC": True,
        "initContainers": [sandbox_driver_manager_init(ctx, spec.driver_manager)],
        "containers": [_manager_container(ctx, pool, module_mounts)],
        "volumes": [*_volumes(), *module_volumes],
    }
    secrets = driver_manager_pull_secrets(ctx, spec.driver_manager)
    if secrets:
        pod["imagePullSecrets"] = secrets
    ds = daemonset(
        ctx, pool.name, labels={"app": pool.name}, pod_spec=pod,
        pod_annotations={"kubectl.kubernetes.io/default-container": CONTAINER},
    )
    return finalize_daemonset(ctx, ds, section="vgpuManager", spec=spec, main_container=CONTAINER)


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.vgpu_manager.enabled):
        return []
    pools = driver_pools(NAME, ctx.config.cluster.operating_systems, precompiled=False)
    rbac = operand_rbac(ctx, SERVICE_ACCOUNT, role_rules=[], cluster_rules=manager_rules(ctx, _CLUSTER_RULES))
    return [*rbac, *(_daemonset(ctx, pool) for pool in pools)]
