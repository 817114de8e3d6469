"""state-vgpu-device-manager: `nvidia-vgpu-device-manager` creates vGPU devices on `vm-vgpu` nodes.

Once the vGPU host driver is up (its init container waits for `vgpu-manager-ready`, or `host-vgpu-manager-ready`
when the driver is installed on the host), the device manager applies a named config from
`/vgpu-config/config.yaml`: the node's `nvidia.com/vgpu.config` label picks it, `DEFAULT_VGPU_CONFIG`
(`vgpuDeviceManager.config.default`, "default") applies otherwise. It reports progress in
`nvidia.com/vgpu.config.state`, hence the ClusterRole that updates nodes. MIG-backed vGPU types need MIG set up
first, for which it uses NVML from the driver root (`/driver-root`) and host services (`/host`).

The configs come from `vgpuDeviceManager.config.name` when set (a ConfigMap the user provides), otherwise from
`default-vgpu-devices-config`, which is rendered here from our table of vGPU types (see vgpu_device_configs).
NVIDIA's Role also grants OpenShift's `privileged` SCC, which is left out.
"""

from __future__ import annotations

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import (
    Object,
    config_map,
    config_map_volume,
    daemonset,
    deploy_selector,
    env,
    env_field,
    host_path,
    mount,
    privileged,
    rule,
)
from gpu_operator.render.operands.common import VALIDATIONS_DIR, node_name_env
from gpu_operator.render.operands.sandbox_common import (
    VALIDATIONS_VOLUME,
    any_file_gate_init,
    operand_rbac,
    sandbox_operand_enabled,
)
from gpu_operator.render.operands.vgpu_device_configs import config_yaml
from gpu_operator.render.transforms import finalize_daemonset, merge_env

__all__ = [
    "STATE", "KEY", "NAME", "DEFAULT_CONFIG_MAP", "DEFAULT_CONFIG_NAME", "CONFIG_DIR", "config_map_name", "render",
]

STATE = "state-vgpu-device-manager"
KEY = "vgpu_device_manager"
NAME = "nvidia-vgpu-device-manager"
DEFAULT_CONFIG_MAP = "default-vgpu-devices-config"
#: The config applied to nodes without a `nvidia.com/vgpu.config` label when none is configured.
DEFAULT_CONFIG_NAME = "default"
CONFIG_DIR = "/vgpu-config"

_ROLE_RULES = [rule([""], ["pods"], ["get", "list", "watch"])]
_CLUSTER_RULES = [
    rule([""], ["nodes"], ["get", "list", "watch", "update"]),
]


def config_map_name(ctx: RenderContext) -> str:
    """The ConfigMap the device manager reads: the user's, or NVIDIA's default name."""
    return ctx.spec.vgpu_device_manager.config.name or DEFAULT_CONFIG_MAP


def _uses_default_configs(ctx: RenderContext) -> bool:
    return config_map_name(ctx) == DEFAULT_CONFIG_MAP


def _manager_container(ctx: RenderContext) -> Object:
    spec = ctx.spec.vgpu_device_manager
    return {
        "name": NAME,
        "image": image_path(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "env": [
            env_field("NAMESPACE", "metadata.namespace"),
            node_name_env(),
            env("CONFIG_FILE", f"{CONFIG_DIR}/config.yaml"),
        ],
        "securityContext": privileged(),
        "volumeMounts": [
            mount("vgpu-config", CONFIG_DIR),
            mount("host-sys", "/sys"),
            mount("host-root", "/host", propagation="HostToContainer"),
            mount("driver-install-dir", "/driver-root", propagation="HostToContainer"),
        ],
    }


def _daemonset(ctx: RenderContext) -> Object:
    spec = ctx.spec.vgpu_device_manager
    pod: Object = {
        "nodeSelector": deploy_selector("vgpu-device-manager"),
        "serviceAccountName": NAME,
        "initContainers": [
            any_file_gate_init(
                "vgpu-manager-validation",
                ("vgpu-manager-ready", "host-vgpu-manager-ready"),
                "the NVIDIA vGPU Manager",
                propagation="Bidirectional",
            )
        ],
        "containers": [_manager_container(ctx)],
        "volumes": [
            config_map_volume("vgpu-config", config_map_name(ctx)),
            host_path("host-sys", "/sys", "Directory"),
            host_path("host-root", "/"),
            host_path("driver-install-dir", "/run/nvidia/driver", "DirectoryOrCreate"),
            host_path(VALIDATIONS_VOLUME, VALIDATIONS_DIR, "DirectoryOrCreate"),
        ],
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    finalize_daemonset(ctx, ds, section="vgpuDeviceManager", spec=spec, main_container=NAME)
    # NVIDIA sets the default config after the user's env, so `config.default` wins over an env of that name.
    merge_env(pod["containers"][0], [env("DEFAULT_VGPU_CONFIG", spec.config.default or DEFAULT_CONFIG_NAME)])
    return ds


def render(ctx: RenderContext) -> list[Object]:
    if not sandbox_operand_enabled(ctx, ctx.spec.vgpu_device_manager.enabled):
        return []
    objects = operand_rbac(ctx, NAME, role_rules=_ROLE_RULES, cluster_rules=_CLUSTER_RULES)
    if _uses_default_configs(ctx):
        objects.append(config_map(ctx, DEFAULT_CONFIG_MAP, {"config.yaml": config_yaml()}))
    return [*objects, _daemonset(ctx)]
