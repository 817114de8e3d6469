"""Device plugin settings: NVIDIA's flags, their environment variables and the config file, with its precedence.

Each setting is a row of :data:`OPTIONS`: its flags, its environment variables, where it sits in the v1 config
file (`flags.migStrategy`, `flags.plugin.passDeviceSpecs`, ...) and its default. A value comes from the command
line, else the first of its variables that is set, else the config file, else the default (urfave/cli's
precedence, as in NVIDIA's plugin). The config file (`--config-file` / `CONFIG_FILE`) also carries the sharing
setup; it is re-read on every SIGHUP, which is how a `nvidia.com/device-plugin.config` label switch arrives.
The IMEX settings are the exception to `flags`: in the file they are the top-level `imex` section
(`channelIDs`, `required`), which a flag or variable overrides.

Some settings are ours: `--health-recovery-period` (off by default, as NVIDIA's plugin never re-advertises a
device it marked unhealthy; see :mod:`.health`), `--proc-root`, where `driver/nvidia-caps/mig-minors` is read
for MIG device specs, `--cdi-spec-dir`, where the CDI specs go (see :mod:`.cdi_spec`), and
`--mps-root-ctr-path`, where this container sees the MPS root whose control daemons it waits for (see :mod:`.mps`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gpu_operator.agents import options
from gpu_operator.agents.cdi import disabled_hooks, feature_flags
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents.plugin_config import PluginConfig
from gpu_operator.agents.plugin_config.settings import resolve_values
from gpu_operator.agents.values import parse_bool, parse_duration

__all__ = [
    "MigStrategy",
    "ListStrategy",
    "IdStrategy",
    "AllocationPolicy",
    "Option",
    "OPTIONS",
    "Settings",
    "SettingsError",
    "DEFAULT_KUBELET_SOCKET",
    "CDI_STRATEGIES",
    "add_arguments",
    "resolve_settings",
]

DEFAULT_KUBELET_SOCKET = "/var/lib/kubelet/device-plugins/kubelet.sock"


class SettingsError(ValueError):
    """A flag, variable or config file value the plugin refuses."""


class MigStrategy(str, Enum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


class ListStrategy(str, Enum):
    """How allocated devices reach the container runtime."""

    ENVVAR = "envvar"
    VOLUME_MOUNTS = "volume-mounts"
    CDI_ANNOTATIONS = "cdi-annotations"
    CDI_CRI = "cdi-cri"


#: The strategies that name CDI devices, for which the plugin writes CDI specs.
CDI_STRATEGIES = frozenset({ListStrategy.CDI_ANNOTATIONS, ListStrategy.CDI_CRI})


class IdStrategy(str, Enum):
    UUID = "uuid"
    INDEX = "index"


class AllocationPolicy(str, Enum):
    """How replicas of shared GPUs are chosen: spread over GPUs, or packed onto the busiest."""

    DISTRIBUTED = "distributed"
    PACKED = "packed"


def _list_strategies(value: Any) -> tuple[ListStrategy, ...]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    chosen: list[ListStrategy] = []
    for item in items:
        text = str(item).strip()
        try:
            strategy = ListStrategy(text)
        except ValueError:
            known = ", ".join(s.value for s in ListStrategy)
            raise ValueError(f"invalid strategy {text!r}: expected one of {known}") from None
        if strategy not in chosen:
            chosen.append(strategy)
    if not chosen:
        raise ValueError("at least one device list strategy is required")
    return tuple(chosen)


def _channel_ids(value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list | tuple) else [v for v in str(value).split(",") if v.strip()]
    channels = []
    for item in items:
        text = str(item).strip()
        if not text.isdigit():
            raise ValueError(f"IMEX channel id {text!r} is not a number")
        channels.append(int(text))
    if channels not in ([], [0]):
        raise ValueError("only IMEX channel 0 is supported (as in NVIDIA's plugin): use 0 or nothing")
    return tuple(channels)


def _names(parse: Callable[[list[str]], frozenset[str]]) -> Callable[[str], frozenset[str]]:
    return lambda text: parse(text.split(","))


def _discovery_strategy(text: str) -> str:
    if text not in ("auto", "nvml"):
        raise ValueError("this agent discovers GPUs through NVML only: use auto or nvml")
    return text


def _strict_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, not {value!r}")
    return value


def _recovery_period(text: str) -> float:
    seconds = parse_duration(text)
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


@dataclass(frozen=True, slots=True)
class Option(options.Option):
    """One setting, which may also come from the config file's `flags` (`file_path` within it)."""

    file_path: tuple[str, ...] | None = None
    from_file: Callable[[Any], Any] | None = None


def _bool_option(name: str, flags: tuple[str, ...], env: tuple[str, ...], path: tuple[str, ...] | None,
                 default: bool, help: str) -> Option:
    return Option(name, flags, env, parse_bool, default, help, True, path, _strict_bool)


OPTIONS: tuple[Option, ...] = (
    Option("mig_strategy", ("--mig-strategy",), ("MIG_STRATEGY",), MigStrategy, MigStrategy.NONE,
           "how MIG devices are exposed: none | single | mixed", file_path=("migStrategy",)),
    _bool_option("fail_on_init_error", ("--fail-on-init-error",), ("FAIL_ON_INIT_ERROR",), ("failOnInitError",),
                 True, "fail when NVML cannot start; otherwise serve no devices"),
    Option("driver_root", ("--driver-root", "--nvidia-driver-root"), ("NVIDIA_DRIVER_ROOT",), str, "/",
           "the driver's root on the host", file_path=("nvidiaDriverRoot",)),
    Option("dev_root", ("--dev-root", "--nvidia-dev-root"), ("NVIDIA_DEV_ROOT",), str, "",
           "the root of /dev on the host (default: the driver root)", file_path=("nvidiaDevRoot",)),
    _bool_option("pass_device_specs", ("--pass-device-specs",), ("PASS_DEVICE_SPECS",),
                 ("plugin", "passDeviceSpecs"), False, "add DeviceSpecs for the device nodes to Allocate responses"),
    Option("device_list_strategy", ("--device-list-strategy",), ("DEVICE_LIST_STRATEGY",), _list_strategies,
           (ListStrategy.ENVVAR,), "envvar | volume-mounts | cdi-annotations | cdi-cri (comma list)",
           file_path=("plugin", "deviceListStrategy"), from_file=_list_strategies),
    Option("device_id_strategy", ("--device-id-strategy",), ("DEVICE_ID_STRATEGY",), IdStrategy, IdStrategy.UUID,
           "uuid | index", file_path=("plugin", "deviceIDStrategy")),
    _bool_option("gdrcopy_enabled", ("--gdrcopy-enabled",), ("GDRCOPY_ENABLED",), ("gdrcopyEnabled",), False,
                 "give containers GDRCopy"),
    _bool_option("gds_enabled", ("--gds-enabled",), ("GDS_ENABLED",), ("gdsEnabled",), False,
                 "give containers GPUDirect Storage"),
    _bool_option("mofed_enabled", ("--mofed-enabled",), ("MOFED_ENABLED",), ("mofedEnabled",), False,
                 "give containers the MOFED devices"),
    Option("cdi_annotation_prefix", ("--cdi-annotation-prefix",), ("CDI_ANNOTATION_PREFIX",), str, "cdi.k8s.io/",
           "prefix of the CDI annotation keys", file_path=("plugin", "cdiAnnotationPrefix")),
    Option("cdi_spec_dir", ("--cdi-spec-dir",), ("CDI_SPEC_DIR",), str, "/var/run/cdi",
           "where the CDI specs of the devices named by the cdi-annotations / cdi-cri strategies are written"),
    Option("nvidia_cdi_hook_path", ("--nvidia-cdi-hook-path", "--nvidia-ctk-path"),
           ("NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"), str, "/usr/bin/nvidia-ctk",
           "the toolkit's nvidia-cdi-hook (or nvidia-ctk) on the host, run by the hooks of the CDI specs",
           file_path=("plugin", "nvidiaCTKPath")),
    Option("cdi_feature_flags", ("--cdi-feature-flags",), ("CDI_FEATURE_FLAGS",), _names(feature_flags), frozenset(),
           "the toolkit's CDI feature flags to apply to the CDI specs (comma list)"),
    Option("cdi_disable_hooks", ("--cdi-disable-hooks",), ("CDI_DISABLE_HOOKS",), _names(disabled_hooks),
           frozenset(), "hooks to leave out of the CDI specs (comma list; 'all' for every hook)"),
    Option("mps_root", ("--mps-root",), ("MPS_ROOT",), str, "", "host directory of the MPS daemons (MPS sharing)",
           file_path=("mpsRoot",)),
    Option("mps_root_ctr_path", ("--mps-root-ctr-path",), ("MPS_ROOT_CTR_PATH",), str, "/mps",
           "where the MPS root is mounted in this container; the plugin waits there for the MPS control daemons"),
    Option("allocation_policy", ("--shared-devices-allocation-policy",), ("SHARED_DEVICES_ALLOCATION_POLICY",),
           AllocationPolicy, AllocationPolicy.DISTRIBUTED, "distributed | packed (replicas of shared GPUs)",
           file_path=("plugin", "sharedDevicesAllocationPolicy")),
    Option("imex_channel_ids", ("--imex-channel-ids",), ("IMEX_CHANNEL_IDS",), _channel_ids, (),
           "IMEX channels to give every container (0 or nothing)"),
    _bool_option("imex_required", ("--imex-required",), ("IMEX_REQUIRED",), None, False,
                 "fail when a requested IMEX channel's device node does not exist"),
    Option("device_discovery_strategy", ("--device-discovery-strategy",), ("DEVICE_DISCOVERY_STRATEGY",),
           _discovery_strategy, "auto", "how GPUs are found: auto | nvml", file_path=("deviceDiscoveryStrategy",)),
    Option("kubelet_socket", ("--kubelet-socket",), ("KUBELET_SOCKET",), str, DEFAULT_KUBELET_SOCKET,
           "the kubelet's registration socket; its directory holds the plugin sockets ('' = do not register)"),
    Option("config_file", ("--config-file",), ("CONFIG_FILE",), str, "", "the v1 config file (flags and sharing)"),
    Option("driver_root_ctr_path", ("--driver-root-ctr-path", "--container-driver-root"),
           ("DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"), str, "/driver-root",
           "where the driver root is mounted in the container (searched for libnvidia-ml.so.1)",
           file_path=("plugin", "containerDriverRoot")),
    Option("dev_root_ctr_path", ("--dev-root-ctr-path",), ("DEV_ROOT_CTR_PATH",), str, "",
           "where the dev root is mounted in the container, to see which device nodes exist (default: the dev root)"),
    Option("validations_dir", ("--validations-dir",), ("VALIDATIONS_DIR",), str, "/run/nvidia/validations",
           "the validator's status directory: when it exists, wait for its driver-ready and use the driver paths "
           "it records"),
    Option("proc_root", ("--proc-root",), ("DP_PROC_ROOT",), str, "/proc",
           "where driver/nvidia-caps/mig-minors is read (MIG device specs)"),
    Option("health_recovery_period", ("--health-recovery-period",), ("DP_HEALTH_RECOVERY_PERIOD",),
           _recovery_period, 0.0, "opt-in: quiet time (a Go duration such as 5m) after which a GPU marked unhealthy "
           "by an XID is healthy again; 0, the default, keeps it unhealthy until restart, as NVIDIA's plugin does"),
    Option("nvml", ("--nvml",), (NVML_ENV,), str, "auto",
           "NVML to use: 'auto' (the driver's) or 'fake:<profile>' (a simulated node)"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, resolved, plus the parsed config file."""

    mig_strategy: MigStrategy = MigStrategy.NONE
    fail_on_init_error: bool = True
    driver_root: str = "/"
    dev_root: str = ""
    pass_device_specs: bool = False
    device_list_strategy: tuple[ListStrategy, ...] = (ListStrategy.ENVVAR,)
    device_id_strategy: IdStrategy = IdStrategy.UUID
    gdrcopy_enabled: bool = False
    gds_enabled: bool = False
    mofed_enabled: bool = False
    cdi_annotation_prefix: str = "cdi.k8s.io/"
    cdi_spec_dir: str = "/var/run/cdi"
    nvidia_cdi_hook_path: str = "/usr/bin/nvidia-ctk"
    cdi_feature_flags: frozenset[str] = frozenset()
    cdi_disable_hooks: frozenset[str] = frozenset()
    mps_root: str = ""
    mps_root_ctr_path: str = "/mps"
    allocation_policy: AllocationPolicy = AllocationPolicy.DISTRIBUTED
    imex_channel_ids: tuple[int, ...] = ()
    imex_required: bool = False
    device_discovery_strategy: str = "auto"
    kubelet_socket: str = DEFAULT_KUBELET_SOCKET
    config_file: str = ""
    driver_root_ctr_path: str = "/driver-root"
    dev_root_ctr_path: str = ""
    validations_dir: str = "/run/nvidia/validations"
    proc_root: str = "/proc"
    health_recovery_period: float = 0.0
    nvml: str = "auto"
    plugin_config: PluginConfig = field(default_factory=PluginConfig)

    @property
    def device_root(self) -> str:
        """The host root the device nodes are under (`--dev-root`, else the driver root)."""
        return self.dev_root or self.driver_root

    @property
    def device_root_here(self) -> str:
        """Where this process sees the dev root (`--dev-root-ctr-path`, else the dev root itself)."""
        return self.dev_root_ctr_path or self.device_root


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every option's flags; unset flags stay None so the environment and the file can decide."""
    options.add_arguments(parser, OPTIONS)


def _check(settings: Settings) -> Settings:
    sharing = settings.plugin_config.sharing
    if sharing.mps is not None and sharing.mps.replicates():
        if settings.mig_strategy is MigStrategy.MIXED:
            raise SettingsError("sharing.mps cannot be used with migStrategy mixed: use none or single, or drop mps")
        if not settings.mps_root:
            raise SettingsError("sharing.mps needs the MPS root: set --mps-root / MPS_ROOT or flags.mpsRoot")
    return settings


def _imex_from_file(cli: Mapping[str, str | None], environ: Mapping[str, str], config: PluginConfig,
                    values: dict[str, Any]) -> None:
    if config.imex is None:
        return
    in_file = {"imex_channel_ids": config.imex.channel_ids, "imex_required": config.imex.required}
    for option in (o for o in OPTIONS if o.name in in_file):
        if options.given(option, cli, environ)[0] is None:
            values[option.name] = in_file[option.name]


def resolve_settings(cli: Mapping[str, str | None], environ: Mapping[str, str]) -> Settings:
    """Settings from parsed flags (name -> text or None), the environment, and the config file they name."""
    path, config, values = resolve_values(OPTIONS, cli, environ, SettingsError)
    _imex_from_file(cli, environ, config, values)
    return _check(Settings(config_file=path, plugin_config=config, **values))
