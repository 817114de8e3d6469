"""The node status exporter's settings: the validator's flags and variables for `COMPONENT=metrics`, plus ours.

From the validator: `--metrics-port/-p` (`METRICS_PORT`, must not be 0), `--node-name/-n` (`NODE_NAME`,
required), `--output-dir/-o` (`OUTPUT_DIR`, the status files), `--component/-c` (`COMPONENT`, only `metrics`
is meaningful here), `--driver-install-dir-ctr-path` (`DRIVER_INSTALL_DIR_CTR_PATH`) and
`--driver-validation-skip-gpu-init` (`DRIVER_VALIDATION_SKIP_GPU_INIT`). This agent's own: `--address`
(listen somewhere other than `:<metrics port>`), `--host-root` (where the host's root is mounted, `/host`),
`--sysfs-root`, the probe intervals (Go durations; the validator's fixed delays by default) and `--nvml`
(`GPU_OPERATOR_NVML`; a simulated node answers the driver and PCI probes). A value comes from the command
line, else the environment, else the default.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_operator.agents.exposition import ListenAddress, parse_listen_address
from gpu_operator.agents.node_status_exporter.status_files import DEFAULT_STATUS_DIR
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents.nvml.selection import parse_nvml_choice
from gpu_operator.agents import options
from gpu_operator.agents.options import Option
from gpu_operator.agents.values import parse_bool, parse_duration

__all__ = ["COMPONENT", "OPTIONS", "Settings", "SettingsError", "add_arguments", "resolve_settings"]

COMPONENT = "metrics"
DEFAULT_PORT = 8000
_MAX_PORT = 65535


class SettingsError(ValueError):
    """A flag or variable value the exporter refuses."""


def _port(text: str) -> int:
    port = int(text)
    if not 0 < port <= _MAX_PORT:
        raise ValueError("must be a port number from 1 to 65535 (0 disables the metrics component)")
    return port


def _component(text: str) -> str:
    if text not in ("", COMPONENT):
        raise ValueError(f"this agent is the validator's {COMPONENT!r} component only")
    return text


def _nvml(text: str) -> str:
    parse_nvml_choice(text)
    return text


def _interval(text: str) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError("must be a positive duration")
    return seconds


OPTIONS: tuple[Option, ...] = (
    Option("metrics_port", ("-p", "--metrics-port"), ("METRICS_PORT",), _port, DEFAULT_PORT,
           "port of /metrics (served on every interface)"),
    Option("address", ("--address",), (), parse_listen_address, None, "listen here instead (HOST:PORT)"),
    Option("node_name", ("-n", "--node-name"), ("NODE_NAME",), str, "", "the node's name (required)"),
    Option("output_dir", ("-o", "--output-dir"), ("OUTPUT_DIR",), str, DEFAULT_STATUS_DIR,
           "the directory of the validator's status files"),
    Option("component", ("-c", "--component"), ("COMPONENT",), _component, COMPONENT, "must be 'metrics'"),
    Option("host_root", ("--host-root",), (), str, "/host", "where the host's root filesystem is mounted"),
    Option("driver_root", ("--driver-install-dir-ctr-path",), ("DRIVER_INSTALL_DIR_CTR_PATH",), str,
           "/run/nvidia/driver", "where a driver container's installation is mounted"),
    Option("skip_gpu_init", ("--driver-validation-skip-gpu-init",), ("DRIVER_VALIDATION_SKIP_GPU_INIT",),
           parse_bool, False, "validate the driver with 'nvidia-smi --version'", boolean=True),
    Option("sysfs_root", ("--sysfs-root",), (), str, "/sys", "sysfs, for counting PCI devices without lspci"),
    Option("status_interval", ("--status-file-interval",), (), _interval, 30.0, "status file check interval"),
    Option("driver_interval", ("--driver-validation-interval",), (), _interval, 60.0,
           "driver validation interval"),
    Option("plugin_interval", ("--device-plugin-interval",), (), _interval, 30.0,
           "device plugin capacity check interval"),
    Option("pci_interval", ("--pci-interval",), (), _interval, 60.0, "PCI device count interval"),
    Option("nvml", ("--nvml",), (NVML_ENV,), _nvml, None,
           "'fake:<profile>': a simulated node answers the driver and PCI probes; 'auto' (default): the real one"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    metrics_port: int = DEFAULT_PORT
    address: ListenAddress | None = None
    node_name: str = ""
    output_dir: str = DEFAULT_STATUS_DIR
    component: str = COMPONENT
    host_root: str = "/host"
    driver_root: str = "/run/nvidia/driver"
    skip_gpu_init: bool = False
    sysfs_root: str = "/sys"
    status_interval: float = 30.0
    driver_interval: float = 60.0
    plugin_interval: float = 30.0
    pci_interval: float = 60.0
    nvml: str | None = None

    @property
    def listen(self) -> ListenAddress:
        return self.address or ListenAddress("", self.metrics_port)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_arguments(parser, OPTIONS)


def resolve_settings(cli: Mapping[str, str | None], environ: Mapping[str, str]) -> Settings:
    settings = Settings(**options.resolve(OPTIONS, cli, environ, SettingsError))
    if not settings.node_name:
        raise SettingsError("invalid -n <node-name> flag: must not be empty string for metrics exporter")
    return settings
