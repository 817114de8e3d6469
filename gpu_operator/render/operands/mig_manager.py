"""state-mig-manager: `nvidia-mig-manager`, which applies the MIG layout a node's `nvidia.com/mig.config` names.

When the label changes, the manager pauses the GPU operands on the node, stops host GPU clients if the driver is
the host's, switches MIG mode and creates the instances (mig-parted), regenerates the CDI spec, and reports
`nvidia.com/mig.config.state`. It needs the host's PID and IPC namespaces, `/sys`, the host root (for systemd
and reboots), the driver root and `/var/run/cdi`, and starts once `toolkit-ready` exists.

Which layouts exist:

* default: ConfigMap `default-mig-parted-config` holds our generated default config
  (:mod:`gpu_operator.mig.default_config`), mounted as `config-default.yaml` and passed as `DEFAULT_CONFIG_FILE`,
  the fallback of a manager that derives layouts from the GPUs it finds;
* `migManager.config.name`: that ConfigMap (key `config.yaml`) is mounted instead and passed as `CONFIG_FILE`;
  with `configs.migManager` set we create it from the validated mig-parted config.

ConfigMap `default-gpu-clients` (the host services to stop) is created unless `migManager.gpuClientsConfig.name`
names another. NVIDIA's image runs an operator-provided `/bin/entrypoint.sh` (ConfigMap
`nvidia-mig-manager-entrypoint`, our own script) that waits for `driver-ready` and exports the driver paths in it;
our agent (`gpu-operator-agent mig-manager`) does that itself, so with the agent that ConfigMap is neither created
nor mounted; the agent stays privileged, as root, with the GPU requests NVIDIA's image makes (`agent_security`).
Upstream's Role also grants OpenShift's `privileged` SCC; that rule grants nothing elsewhere and is left out.
"""

from __future__ import annotations

import posixpath
from functools import cache

import yaml

from gpu_operator.mig.clients import gpu_clients_document
from gpu_operator.mig.default_config import default_config, to_yaml
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
    env_field,
    host_path,
    mount,
    privileged,
    role,
    role_binding,
    rule,
    service_account,
)
from gpu_operator.render.operands.agent_security import secure_agent
from gpu_operator.render.operands.common import (
    VALIDATIONS_DIR,
    apply_runtime_class,
    read_script,
    toolkit_validation_init,
)
from gpu_operator.render.transforms import finalize_daemonset

__all__ = [
    "STATE",
    "KEY",
    "NAME",
    "DEFAULT_CONFIG_MAP",
    "DEFAULT_GPU_CLIENTS_MAP",
    "ENTRYPOINT",
    "CONFIG_DIR",
    "entrypoint_script",
    "default_config_text",
    "render",
]

STATE = "state-mig-manager"
KEY = "mig_manager"
SECTION = "migManager"
NAME = "nvidia-mig-manager"
DEFAULT_CONFIG_MAP = "default-mig-parted-config"
DEFAULT_GPU_CLIENTS_MAP = "default-gpu-clients"
ENTRYPOINT = "nvidia-mig-manager-entrypoint"
CONFIG_DIR = "/mig-parted-config"
CONFIG_KEY = "config.yaml"
DEFAULT_CONFIG_FILE = "config-default.yaml"
CLIENTS_DIR = "/gpu-clients"
CLIENTS_KEY = "clients.yaml"
LABELS = {"app": NAME}
_ENTRYPOINT_MODE = 0o700


def entrypoint_script() -> str:
    """Our `/bin/entrypoint.sh` for NVIDIA's image (package data)."""
    return read_script("mig-manager-entrypoint.sh")


@cache
def default_config_text() -> str:
    """The YAML of `default-mig-parted-config`: generated from the MIG catalog."""
    return to_yaml(default_config())


def _custom_config_name(ctx: RenderContext) -> str | None:
    """The user's mig-parted ConfigMap, or None when the default one is used."""
    name = ctx.spec.mig_manager.config.name
    return name if name and name != DEFAULT_CONFIG_MAP else None


def _clients_config_name(ctx: RenderContext) -> str:
    return ctx.spec.mig_manager.gpu_clients_config.name or DEFAULT_GPU_CLIENTS_MAP


def _config_env_and_volume(ctx: RenderContext) -> tuple[Object, Object]:
    custom = _custom_config_name(ctx)
    if custom is not None:
        return env("CONFIG_FILE", f"{CONFIG_DIR}/{CONFIG_KEY}"), config_map_volume("mig-parted-config", custom)
    volume = config_map_volume("mig-parted-config", DEFAULT_CONFIG_MAP, items=[(CONFIG_KEY, DEFAULT_CONFIG_FILE)])
    return env("DEFAULT_CONFIG_FILE", f"{CONFIG_DIR}/{DEFAULT_CONFIG_FILE}"), volume


def _cdi_env(ctx: RenderContext) -> list[Object]:
    if not ctx.cdi_enabled:
        return []
    variables = [env("CDI_ENABLED", True)]
    toolkit = ctx.spec.toolkit
    if toolkit.enabled:
        variables.append(env("NVIDIA_CDI_HOOK_PATH", posixpath.join(toolkit.install_dir, "toolkit", "nvidia-cdi-hook")))
    return variables


def _program(ctx: RenderContext) -> Object:
    if ctx.uses_agent(SECTION):
        return {"command": ctx.agent_command(SECTION)}
    return {"command": ["/bin/entrypoint.sh"]}


def _container(ctx: RenderContext, config_env: Object) -> Object:
    mounts = [
        mount("host-sys", "/sys"),
        mount("mig-parted-config", CONFIG_DIR),
        mount("host-root", "/host", propagation="HostToContainer"),
        mount("gpu-clients", CLIENTS_DIR),
        mount("run-nvidia-validations", VALIDATIONS_DIR, propagation="HostToContainer"),
        mount("driver-install-dir", DRIVER_ROOT_CTR, propagation="HostToContainer"),
        mount("cdi-root", "/var/run/cdi"),
    ]
    if not ctx.uses_agent(SECTION):
        mounts.insert(0, mount(ENTRYPOINT, "/bin/entrypoint.sh", read_only=True, sub_path="entrypoint.sh"))
    return {
        "name": NAME,
        "image": operand_image(ctx, SECTION, ctx.spec.mig_manager),
        **_program(ctx),
        "env": [
            env_field("NODE_NAME", "spec.nodeName"),
            env_field("POD_NAME", "metadata.name"),
            env_field("POD_NAMESPACE", "metadata.namespace"),
            env("GPU_CLIENTS_FILE", f"{CLIENTS_DIR}/{CLIENTS_KEY}"),
            env_field("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace"),
            config_env,
            *_cdi_env(ctx),
        ],
        "securityContext": privileged(),
        "volumeMounts": mounts,
    }


def _volumes(ctx: RenderContext, config_volume: Object) -> list[Object]:
    volumes = [
        host_path("host-sys", "/sys", "Directory"),
        config_volume,
        host_path("host-root", "/"),
        config_map_volume("gpu-clients", _clients_config_name(ctx)),
        host_path("run-nvidia-validations", VALIDATIONS_DIR, "DirectoryOrCreate"),
        host_path("driver-install-dir", "/run/nvidia/driver", "DirectoryOrCreate"),
        host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
    ]
    if not ctx.uses_agent(SECTION):
        volumes.insert(0, config_map_volume(ENTRYPOINT, ENTRYPOINT, default_mode=_ENTRYPOINT_MODE))
    return volumes


def _daemonset(ctx: RenderContext) -> Object:
    config_env, config_volume = _config_env_and_volume(ctx)
    pod: Object = {
        "nodeSelector": deploy_selector("mig-manager"),
        "serviceAccountName": NAME,
        "hostPID": True,
        "hostIPC": True,
        "initContainers": [toolkit_validation_init()],
        "containers": [_container(ctx, config_env)],
        "volumes": _volumes(ctx, config_volume),
    }
    ds = daemonset(ctx, NAME, labels=LABELS, pod_spec=pod)
    apply_runtime_class(ctx, pod, ds["spec"]["template"]["metadata"])
    secure_agent(ctx, SECTION, pod["containers"][0], ctx.spec.mig_manager.env)
    return finalize_daemonset(ctx, ds, section=SECTION, spec=ctx.spec.mig_manager, main_container=NAME)


def _config_maps(ctx: RenderContext) -> list[Object]:
    user_config = ctx.config.configs.mig_manager
    user_text = to_yaml(user_config.to_document()) if user_config is not None else None
    custom = _custom_config_name(ctx)
    maps = []
    if custom is None:
        maps.append(config_map(ctx, DEFAULT_CONFIG_MAP, {CONFIG_KEY: user_text or default_config_text()}, LABELS))
    elif user_text is not None:
        maps.append(config_map(ctx, custom, {CONFIG_KEY: user_text}, LABELS))
    if _clients_config_name(ctx) == DEFAULT_GPU_CLIENTS_MAP:
        clients = yaml.safe_dump(gpu_clients_document(), sort_keys=False)
        maps.append(config_map(ctx, DEFAULT_GPU_CLIENTS_MAP, {CLIENTS_KEY: clients}, LABELS))
    if not ctx.uses_agent(SECTION):
        maps.append(config_map(ctx, ENTRYPOINT, {"entrypoint.sh": entrypoint_script()}, LABELS))
    return maps


def render(ctx: RenderContext) -> list[Object]:
    if not ctx.spec.mig_manager.enabled:
        return []
    return [
        service_account(ctx, NAME),
        role(ctx, NAME, [
            rule([""], ["pods"], ["get", "list", "watch", "delete"]),
            rule([""], ["configmaps"], ["create", "get", "list", "update", "patch"]),
        ]),
        cluster_role(NAME, [
            rule([""], ["nodes"], ["get", "list", "watch", "update", "patch"]),
            rule([""], ["pods"], ["list"]),
        ]),
        role_binding(ctx, NAME),
        cluster_role_binding(ctx, NAME),
        *_config_maps(ctx),
        _daemonset(ctx),
    ]
