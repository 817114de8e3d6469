"""What the device plugin, the MPS control daemon and GPU feature discovery share: MIG env and the plugin config.

MIG: each of the three containers learns the cluster's MIG strategy from `MIG_STRATEGY`, and watches MIG devices
for health when a strategy other than `none` exposes them (`NVIDIA_MIG_MONITOR_DEVICES=all`).

Plugin config: `devicePlugin.config.name` names a ConfigMap whose keys are named device-plugin configs (the
`api/config/v1` file; see `gpu_operator.config.device_plugin`). When it is set, each of the three pods gets

* `config-manager-init` (last init container, one-shot) and a `config-manager` sidecar. Both read the node's
  `nvidia.com/device-plugin.config` label, copy the matching key from the ConfigMap (mounted at
  `/available-configs`) to `/config/config.yaml` (a shared emptyDir) and, for the sidecar, send SIGHUP to the
  program so it reloads. Without the label, `devicePlugin.config.default` is used; failing that, no config;
* `CONFIG_FILE=/config/config.yaml` and both mounts on the main container;
* `shareProcessNamespace: true`, so the sidecar can signal the program (not needed with `hostPID`).

The config-manager is NVIDIA's `config-manager` from the device-plugin image, or `gpu-operator-agent config-manager`
from the agents image when our agent implements the owning operand; that sidecar then signals the agent by its
command line (`PROCESS_TO_SIGNAL=gpu-operator-agent device-plugin`). When `configs.devicePlugin` holds the
contents, this package also creates the ConfigMap: each value is the YAML of one config, exactly the document
the upstream plugin parses.
"""

from __future__ import annotations

import yaml

from gpu_operator.render.context import RenderContext
from gpu_operator.render.images import image_path
from gpu_operator.render.k8s import Object, config_map, config_map_volume, empty_dir, env, mount, privileged
from gpu_operator.render.operands.common import node_name_env
from gpu_operator.render.transforms import merge_env

__all__ = [
    "CONFIG_LABEL",
    "CONFIG_FILE",
    "AVAILABLE_CONFIGS_DIR",
    "CONFIG_DIR",
    "mig_env",
    "plugin_config_map",
    "uses_plugin_config",
    "add_config_manager_init",
    "add_config_manager_sidecar",
    "add_plugin_config",
]

#: The node label that selects one of the named configs.
CONFIG_LABEL = "nvidia.com/device-plugin.config"
CONFIG_DIR = "/config"
CONFIG_FILE = f"{CONFIG_DIR}/config.yaml"
AVAILABLE_CONFIGS_DIR = "/available-configs"
_SHARED_VOLUME = "config"
_AGENT_COMMAND = ["gpu-operator-agent", "config-manager"]
_CONFIG_MANAGER_OWNER = "devicePlugin"



def mig_env(ctx: RenderContext) -> list[Object]:
    """`MIG_STRATEGY`, and `NVIDIA_MIG_MONITOR_DEVICES=all` unless the strategy is `none`."""
    strategy = ctx.mig_strategy
    variables = [env("MIG_STRATEGY", strategy)]
    if strategy != "none":
        variables.append(env("NVIDIA_MIG_MONITOR_DEVICES", "all"))
    return variables


def uses_plugin_config(ctx: RenderContext) -> bool:
    return bool(ctx.spec.device_plugin.config.name)


def plugin_config_map(ctx: RenderContext) -> Object | None:
    """The ConfigMap of named configs from `configs.devicePlugin`, or None when the config names an existing one."""
    configs = ctx.config.configs.device_plugin
    if configs is None or not uses_plugin_config(ctx):
        return None
    data = {name: yaml.safe_dump(config.to_document(), sort_keys=False) for name, config in configs.items()}
    return config_map(ctx, ctx.spec.device_plugin.config.name, data)


def _mounts(ctx: RenderContext) -> list[Object]:
    return [mount(_SHARED_VOLUME, CONFIG_DIR), mount(ctx.spec.device_plugin.config.name, AVAILABLE_CONFIGS_DIR)]


def _agent_config_manager(ctx: RenderContext, section: str | None) -> bool:
    """Our config-manager ships with the device-plugin agent; it serves an operand that runs our agent."""
    return section is not None and ctx.uses_agent(section) and ctx.uses_agent(_CONFIG_MANAGER_OWNER)


def _program(ctx: RenderContext, section: str | None) -> tuple[str, str, list[str]]:
    """(image, pull policy, command) of the config-manager for an operand section (None: always NVIDIA's)."""
    if _agent_config_manager(ctx, section):
        agents = ctx.config.agents.image
        return agents.reference, agents.pull_policy, list(_AGENT_COMMAND)
    plugin = ctx.spec.device_plugin
    return image_path(plugin), plugin.image_pull_policy, ["config-manager"]


def _sends_signal(ctx: RenderContext, section: str | None, oneshot: bool) -> bool:
    """Whether the sidecar signals the program after switching configs.

    NVIDIA's config-manager finds the process by its argv[0]; a Python console script's argv[0] is the
    interpreter, so it cannot find our agents. Next to NVIDIA's config-manager our agents watch the config file
    themselves, and the sidecar only switches it.
    """
    if oneshot:
        return False
    return not (section is not None and ctx.uses_agent(section) and not _agent_config_manager(ctx, section))


def _config_manager(ctx: RenderContext, section: str | None, *, oneshot: bool, process: str) -> Object:
    image, policy, command = _program(ctx, section)
    signal = _sends_signal(ctx, section, oneshot)
    container: Object = {
        "name": "config-manager-init" if oneshot else "config-manager",
        "image": image,
        "imagePullPolicy": policy,
        "command": command,
        "env": [
            env("ONESHOT", oneshot),
            env("KUBECONFIG", ""),
            node_name_env(),
            env("NODE_LABEL", CONFIG_LABEL),
            env("CONFIG_FILE_SRCDIR", AVAILABLE_CONFIGS_DIR),
            env("CONFIG_FILE_DST", CONFIG_FILE),
            env("DEFAULT_CONFIG", ctx.spec.device_plugin.config.default),
            env("SEND_SIGNAL", signal),
            env("SIGNAL", "1" if signal else ""),
            env("PROCESS_TO_SIGNAL", process if signal else ""),
            env("FALLBACK_STRATEGIES", "empty"),
        ],
        "volumeMounts": _mounts(ctx),
    }
    if signal:
        container["securityContext"] = privileged()
    return container


def add_config_manager_init(ctx: RenderContext, pod: Object, section: str | None) -> None:
    """Append `config-manager-init` to the pod's init containers (when a plugin config is named)."""
    if uses_plugin_config(ctx):
        pod.setdefault("initContainers", []).append(_config_manager(ctx, section, oneshot=True, process=""))


def add_config_manager_sidecar(ctx: RenderContext, pod: Object, section: str | None, process: str) -> None:
    """Append the `config-manager` sidecar that signals `process` (when a plugin config is named)."""
    if uses_plugin_config(ctx):
        pod["containers"].append(_config_manager(ctx, section, oneshot=False, process=process))


def add_plugin_config(ctx: RenderContext, pod: Object, main: Object) -> None:
    """Point the main container at the selected config: env, mounts, volumes, process namespace sharing."""
    if not uses_plugin_config(ctx):
        return
    merge_env(main, [env("CONFIG_FILE", CONFIG_FILE)])
    main.setdefault("volumeMounts", []).extend(_mounts(ctx))
    if not pod.get("hostPID"):
        pod["shareProcessNamespace"] = True
    name = ctx.spec.device_plugin.config.name
    pod.setdefault("volumes", []).extend([config_map_volume(name, name), empty_dir(_SHARED_VOLUME)])
