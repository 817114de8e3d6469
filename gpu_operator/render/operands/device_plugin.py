"""state-device-plugin: `nvidia-device-plugin-daemonset`, which advertises GPUs to the kubelet as `nvidia.com/gpu`.

The plugin registers with the kubelet through `<kubeletRootDir>/device-plugins` and hands each allocated GPU to
the container runtime: by CDI annotations and CRI device fields when CDI is on (the default), by the
`NVIDIA_VISIBLE_DEVICES` env var otherwise. It starts once `toolkit-ready` exists, and NVIDIA's image runs an
operator-provided `/bin/entrypoint.sh` (ConfigMap `nvidia-device-plugin-entrypoint`) that waits for the
validator's `driver-ready` and exports the driver paths recorded there. Our agent (`gpu-operator-agent
device-plugin`) does that wait itself, so with the agent the entrypoint ConfigMap is neither created nor mounted,
and it runs unprivileged as root (CAP_SYS_ADMIN only when it must watch MIG devices; see `agent_security`).

Named plugin configs (time-slicing, MPS sharing, MIG strategy per node) come through `devicePlugin.config`; see
:mod:`gpu_operator.render.operands.plugin_config`. MPS sharing also needs the MPS root (`devicePlugin.mps.root`,
mounted at `/mps`, its `shm` at `/dev/shm`) shared with the MPS control daemon.

Upstream also creates a Role granting only OpenShift's `privileged` SCC; on other clusters it grants nothing, so
we render the ServiceAccount and the node-reading ClusterRole alone.
"""

from __future__ import annotations

import posixpath

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import operand_image
from gpu_operator.render.k8s import (
    DRIVER_ROOT_CTR,
    Object,
    cluster_role,
    cluster_role_binding,
    config_map,
    config_map_volume,
    daemonset,
    deploy_selector,
    env,
    host_path,
    mount,
    privileged,
    rule,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent, secure_config_managers
from gpu_operator.render.operands.common import (
    VALIDATIONS_DIR,
    apply_runtime_class,
    read_script,
    toolkit_validation_init,
)
from gpu_operator.render.operands.plugin_config import (
    add_config_manager_init,
    add_config_manager_sidecar,
    add_plugin_config,
    mig_env,
    plugin_config_map,
)
from gpu_operator.render.transforms import finalize_daemonset, merge_env

__all__ = ["STATE", "KEY", "NAME", "SERVICE_ACCOUNT", "CONTAINER", "ENTRYPOINT", "entrypoint_script", "render"]

STATE = "state-device-plugin"
KEY = "device_plugin"
SECTION = "devicePlugin"
NAME = "nvidia-device-plugin-daemonset"
SERVICE_ACCOUNT = "nvidia-device-plugin"
CONTAINER = "nvidia-device-plugin"
ENTRYPOINT = "nvidia-device-plugin-entrypoint"
_ENTRYPOINT_MODE = 0o700
_PLUGIN_DIR_CTR = "/var/lib/kubelet/device-plugins"

#: The template env of the plugin container (NVIDIA's manifest); the transforms below edit it by name.
_BASE_ENV = (
    ("PASS_DEVICE_SPECS", "true"),
    ("FAIL_ON_INIT_ERROR", "true"),
    ("DEVICE_LIST_STRATEGY", "envvar"),
    ("DEVICE_ID_STRATEGY", "uuid"),
    ("NVIDIA_VISIBLE_DEVICES", "all"),
    ("NVIDIA_DRIVER_CAPABILITIES", "all"),
)


def entrypoint_script() -> str:
    """Our `/bin/entrypoint.sh` for NVIDIA's image (package data)."""
    return read_script("device-plugin-entrypoint.sh")


def _storage_env(ctx: RenderContext) -> list[Object]:
    """GPUDirect Storage (with the InfiniBand devices it uses) and GDRCopy device nodes for pods."""
    variables: list[Object] = []
    if ctx.spec.gds.enabled:
        variables += [env("GDS_ENABLED", True), env("MOFED_ENABLED", True)]
    if ctx.spec.gdrcopy.enabled:
        variables.append(env("GDRCOPY_ENABLED", True))
    return variables


def _cdi_env(ctx: RenderContext) -> list[Object]:
    if not ctx.cdi_enabled:
        return []
    variables = [
        env("CDI_ENABLED", True),
        env("DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"),
        env("CDI_ANNOTATION_PREFIX", "cdi.k8s.io/"),
    ]
    toolkit = ctx.spec.toolkit
    if toolkit.enabled:
        variables.append(env("NVIDIA_CDI_HOOK_PATH", posixpath.join(toolkit.install_dir, "toolkit", "nvidia-cdi-hook")))
    return variables


def _program(ctx: RenderContext) -> Object:
    if ctx.uses_agent(SECTION):
        return {"command": ctx.agent_command(SECTION)}
    return {"command": ["/bin/sh", "-c"], "args": ["/bin/entrypoint.sh"]}


def _main_container(ctx: RenderContext) -> Object:
    mps_root = ctx.spec.device_plugin.mps.root
    mounts = [
        mount("device-plugin", _PLUGIN_DIR_CTR),
        mount("run-nvidia-validations", VALIDATIONS_DIR),
        mount("driver-install-dir", DRIVER_ROOT_CTR, propagation="HostToContainer"),
        mount("host-root", "/host", read_only=True, propagation="HostToContainer"),
        mount("cdi-root", "/var/run/cdi"),
        # the plugin health-checks MPS daemons through their /dev/shm
        mount("mps-shm", "/dev/shm"),
        mount("mps-root", "/mps"),
    ]
    if not ctx.uses_agent(SECTION):
        mounts.insert(0, mount(ENTRYPOINT, "/bin/entrypoint.sh", read_only=True, sub_path="entrypoint.sh"))
    return {
        "name": CONTAINER,
        "image": operand_image(ctx, SECTION, ctx.spec.device_plugin),
        **_program(ctx),
        "securityContext": privileged(),
        "env": [env(name, value) for name, value in _BASE_ENV] + [env("MPS_ROOT", mps_root)],
        "volumeMounts": mounts,
    }


def _volumes(ctx: RenderContext) -> list[Object]:
    kubelet_root, mps_root = ctx.spec.host_paths.kubelet_root_dir, ctx.spec.device_plugin.mps.root
    volumes = [
        host_path("device-plugin", posixpath.join(kubelet_root, "device-plugins")),
        host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate"),
        host_path("driver-install-dir", "/run/nvidia/driver", "DirectoryOrCreate"),
        host_path("host-root", "/"),
        host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
        host_path("mps-root", mps_root, "DirectoryOrCreate"),
        host_path("mps-shm", posixpath.join(mps_root, "shm")),
    ]
    if not ctx.uses_agent(SECTION):
        volumes.insert(0, config_map_volume(ENTRYPOINT, ENTRYPOINT, default_mode=_ENTRYPOINT_MODE))
    return volumes


def _signalled_process(ctx: RenderContext) -> str:
    """The process the config-manager sidecar sends SIGHUP to after switching configs."""
    if ctx.uses_agent(SECTION):
        return " ".join(ctx.agent_command(SECTION))
    return "nvidia-device-plugin"


def _daemonset(ctx: RenderContext) -> Object:
    main = _main_container(ctx)
    pod: Object = {
        "nodeSelector": deploy_selector("device-plugin"),
        "serviceAccountName": SERVICE_ACCOUNT,
        "initContainers": [toolkit_validation_init()],
        "containers": [main],
        "volumes": _volumes(ctx),
    }
    ds = daemonset(ctx, NAME, labels={"app": NAME}, pod_spec=pod)
    # before the sidecar joins: NVIDIA annotates only the plugin container for NRI injection
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    add_config_manager_init(ctx, pod, SECTION)
    add_config_manager_sidecar(ctx, pod, SECTION, process=_signalled_process(ctx))
    merge_env(main, _storage_env(ctx))
    add_plugin_config(ctx, pod, main)
    merge_env(main, mig_env(ctx) + _cdi_env(ctx))
    secure_agent(ctx, SECTION, main, ctx.spec.device_plugin.env)
    secure_config_managers(ctx, SECTION, pod)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=ctx.spec.device_plugin, main_container=CONTAINER)


def _entrypoint(ctx: RenderContext) -> Object:
    return config_map(ctx, ENTRYPOINT, {"entrypoint.sh": entrypoint_script()}, labels={"app": NAME})


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.device_plugin.enabled:
        return []
    nodes_read = [rule([""], ["nodes"], ["get", "list", "watch"])]
    objects = [
        service_account(ctx, SERVICE_ACCOUNT),
        cluster_role(SERVICE_ACCOUNT, nodes_read),
        cluster_role_binding(ctx, SERVICE_ACCOUNT),
    ]
    user_configs = plugin_config_map(ctx)
    if user_configs is not None:
        objects.append(user_configs)
    if not ctx.uses_agent(SECTION):
        objects.append(_entrypoint(ctx))
    objects.append(_daemonset(ctx))
    return objects
