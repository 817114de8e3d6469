"""The driver manager's settings: NVIDIA k8s-driver-manager's flags and environment, plus a few of our own.

Every setting of NVIDIA's program keeps its flag, its variable and its default (`ENABLE_AUTO_DRAIN` defaults to
true in the program; the rendered init container sets it false, as NVIDIA's operator does). Durations are Go
durations (`0s`, `5m`, `1h30m`); a bare number is read as seconds, as the shell-script driver manager read
`DRAIN_TIMEOUT_SECONDS`. Ours: `--root` (every host path is read under it, for tests and dry runs), the wait
before exiting when the host has its own driver, the operand shutdown timeout and the poll interval.

A value that cannot be parsed is a :class:`SettingsError` naming the flag or variable it came from.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpu_operator.agents.options import Option, add_arguments, flag_option, resolve
from gpu_operator.agents.values import parse_duration
from gpu_operator.facts.label_selector import LabelSelector, parse_selector

__all__ = ["COMMANDS", "OPTIONS", "DrainOptions", "Settings", "SettingsError", "build_parser", "load_settings"]

#: The subcommands; NVIDIA's `preflight_check` only logs, so it is not offered.
COMMANDS = ("uninstall_driver",)


class SettingsError(ValueError):
    """A setting is missing or malformed; the message names the flag or variable."""


def _seconds(text: str) -> float:
    """A Go duration, or a bare number of seconds; never negative."""
    stripped = text.strip()
    try:
        value = float(stripped)
    except ValueError:
        value = parse_duration(stripped)
    if value < 0 or value != value:
        raise ValueError("must not be negative")
    return value


def _text(text: str) -> str:
    return text.strip()


def _positive(text: str) -> float:
    value = _seconds(text)
    if value <= 0:
        raise ValueError("must be more than zero")
    return value


_OPTIONS: tuple[Option, ...] = (
    Option("node_name", ("--node-name",), ("NODE_NAME",), _text, "", "the node to manage (the pod's spec.nodeName)"),
    flag_option("drain_use_force", ("--drain-use-force",), "DRAIN_USE_FORCE", False,
                "also drain pods that no controller manages"),
    Option("drain_pod_selector", ("--drain-pod-selector-label",), ("DRAIN_POD_SELECTOR_LABEL",), parse_selector,
           parse_selector(""), "label selector of the pods a drain evicts (default: all)"),
    Option("drain_timeout", ("--drain-timeout-seconds",), ("DRAIN_TIMEOUT_SECONDS",), _seconds, 0.0,
           "how long eviction and drain may take (Go duration; 0: no limit)"),
    flag_option("drain_delete_emptydir_data", ("--drain-delete-emptydir-data",), "DRAIN_DELETE_EMPTYDIR_DATA", False,
                "also evict pods with emptyDir volumes (their data is lost)"),
    flag_option("enable_auto_drain", ("--enable-auto-drain",), "ENABLE_AUTO_DRAIN", True,
                "drain the node when evicting GPU pods or unloading the driver fails"),
    flag_option("enable_gpu_pod_eviction", ("--enable-gpu-pod-eviction",), "ENABLE_GPU_POD_EVICTION", True,
                "cordon the node and evict the pods using GPUs before unloading the driver"),
    Option("operator_namespace", ("--operator-namespace",), ("OPERATOR_NAMESPACE",), _text, "gpu-operator",
           "namespace of the operand pods"),
    Option("eviction_label", ("--node-label-for-gpu-pod-eviction",), ("NODE_LABEL_FOR_GPU_POD_EVICTION",), _text, "",
           "one more node label to pause, selected by custom GPU operands"),
    flag_option("gpu_direct_rdma", ("--gpu-direct-rdma-enabled",), "GPU_DIRECT_RDMA_ENABLED", False,
                "wait for MOFED before the driver installs (when the node has Mellanox devices)"),
    flag_option("use_host_mofed", ("--use-host-mofed",), "USE_HOST_MOFED", False,
                "MOFED is the host's (mlx5_core loaded) rather than the MOFED driver pod's"),
    flag_option("force_reinstall", ("--force-reinstall",), "FORCE_REINSTALL", False,
                "reinstall even when the loaded driver has the desired config digest"),
    Option("desired_digest", (), ("DRIVER_CONFIG_DIGEST",), _text, "", "the digest of the driver this pod installs"),
    Option("root", ("--root",), ("DRIVER_MANAGER_ROOT",), Path, Path("/"), "read and write every host path under this"),
    Option("host_driver_delay", ("--host-driver-delay",), ("HOST_DRIVER_DELAY",), _seconds, 60.0,
           "with a host driver: how long to wait before exiting, for the pod to stop being scheduled"),
    Option("operand_timeout", ("--operand-timeout",), ("OPERAND_SHUTDOWN_TIMEOUT",), _positive, 300.0,
           "how long the paused operand pods may take to terminate"),
    Option("poll_interval", ("--poll-interval",), ("DRIVER_MANAGER_POLL_INTERVAL",), _positive, 5.0,
           "seconds between observations while waiting (and between refused evictions)"),
)
#: The options, each help naming its variable.
OPTIONS: tuple[Option, ...] = tuple(replace(o, help=f"{o.help} (env {', '.join(o.env)})") for o in _OPTIONS)


@dataclass(frozen=True)
class DrainOptions:
    """NVIDIA's DRAIN_* settings: what an eviction or drain may remove, and for how long it may try."""

    force: bool = False
    delete_emptydir_data: bool = False
    timeout: float = 0.0
    pod_selector: LabelSelector = LabelSelector("")


@dataclass(frozen=True)
class Settings:
    node_name: str
    enable_gpu_pod_eviction: bool = True
    enable_auto_drain: bool = True
    drain: DrainOptions = DrainOptions()
    operator_namespace: str = "gpu-operator"
    eviction_label: str = ""
    gpu_direct_rdma: bool = False
    use_host_mofed: bool = False
    force_reinstall: bool = False
    desired_digest: str = ""
    root: Path = Path("/")
    host_driver_delay: float = 60.0
    operand_timeout: float = 300.0
    poll_interval: float = 5.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-operator-agent driver-manager",
        description="Prepare the node for the driver pod: pause the operands, evict GPU pods, unload the old driver.",
    )
    parser.add_argument("command", nargs="?", help="uninstall_driver")
    add_arguments(parser, OPTIONS)
    return parser


def load_settings(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[str, Settings]:
    """The subcommand and the settings from flags, then environment, then defaults."""
    args = build_parser().parse_args(list(argv))  # argparse exits itself: 0 for --help, 2 for a bad flag
    if args.command not in COMMANDS:
        given = "no command" if args.command is None else f"unknown command {args.command!r}"
        raise SettingsError(f"{given}: expected {' or '.join(COMMANDS)}")
    values = resolve(OPTIONS, vars(args), environ, SettingsError)
    if not values["node_name"]:
        raise SettingsError("the node is unknown: set NODE_NAME (the pod's spec.nodeName) or --node-name")
    drain = DrainOptions(
        force=values.pop("drain_use_force"),
        delete_emptydir_data=values.pop("drain_delete_emptydir_data"),
        timeout=values.pop("drain_timeout"),
        pod_selector=values.pop("drain_pod_selector"),
    )
    return args.command, Settings(drain=drain, **values)
