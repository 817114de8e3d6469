"""The validator's settings: `nvidia-validator`'s flags and environment variables, with its defaults.

Each setting is a row of :data:`OPTIONS`: its flags, its environment variable and its default. A flag given on
the command line wins over the variable, which wins over the default (urfave/cli's rule). Settings without
flags (`VALIDATOR_IMAGE`, `GPU_DIRECT_RDMA_ENABLED`, ...) are read only from the environment, as NVIDIA's
validator reads them; the operator injects them into the validation containers.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_operator.agents import options
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents.options import Option, flag_option
from gpu_operator.agents.validator.gpu_resources import RESOURCE_PREFIXES
from gpu_operator.agents.validator.status import DEFAULT_OUTPUT_DIR

__all__ = [
    "DEFAULT_DRIVER_INSTALL_DIR",
    "OPTIONS",
    "Option",
    "Settings",
    "SettingsError",
    "add_arguments",
    "resolve_settings",
]

DEFAULT_DRIVER_INSTALL_DIR = "/run/nvidia/driver"


class SettingsError(ValueError):
    """A flag or variable value the validator would refuse."""


def _mig_strategy(text: str) -> str:
    if text not in RESOURCE_PREFIXES:
        raise ValueError(f"unknown MIG strategy {text!r} (expected {', '.join(RESOURCE_PREFIXES)})")
    return text


def _strings(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _option(
    name: str, flags: tuple[str, ...], env: str, default: Any, help: str, parse: Callable[[str], Any] = str
) -> Option:
    return Option(name, flags, (env,), parse, default, help)


_flag = flag_option


OPTIONS: tuple[Option, ...] = (
    _option(
        "component",
        ("--component", "-c"),
        "COMPONENT",
        "",
        "the component to validate: driver, toolkit, cuda, plugin, mofed, nvidia-fs, gdrcopy, nvidia-peermem",
    ),
    _flag("with_wait", ("--with-wait", "-w"), "WITH_WAIT", False, "retry the check until it passes"),
    _flag(
        "with_workload",
        ("--with-workload", "-l"),
        "WITH_WORKLOAD",
        True,
        "validate by running a GPU workload pod (cuda, plugin)",
    ),
    _flag("cleanup_all", ("--cleanup-all", "-r"), "CLEANUP_ALL", False, "remove all previous status files first"),
    _option(
        "output_dir", ("--output-dir", "-o"), "OUTPUT_DIR", DEFAULT_OUTPUT_DIR, "the directory of the status files"
    ),
    _option(
        "sleep_interval_seconds",
        ("--sleep-interval-seconds", "-s"),
        "SLEEP_INTERVAL_SECONDS",
        5,
        "seconds between retries",
        int,
    ),
    _option(
        "mig_strategy",
        ("--mig-strategy", "-m"),
        "MIG_STRATEGY",
        "single",
        "the MIG strategy of the device plugin: none, single, mixed",
        _mig_strategy,
    ),
    _option("node_name", ("--node-name", "-n"), "NODE_NAME", "", "the node being validated"),
    _option("namespace", ("--namespace", "--ns"), "OPERATOR_NAMESPACE", "", "the namespace of the operator's objects"),
    _option(
        "kubeconfig", ("--kubeconfig",), "KUBECONFIG", "", "a kubeconfig file (default: the pod's service account)"
    ),
    _option(
        "metrics_port",
        ("--metrics-port", "-p"),
        "METRICS_PORT",
        0,
        "the node-status metrics port (component metrics)",
        int,
    ),
    _option(
        "default_gpu_workload_config",
        ("--default-gpu-workload-config", "-g"),
        "DEFAULT_GPU_WORKLOAD_CONFIG",
        "",
        "the default GPU workload config (sandbox validation)",
    ),
    _flag(
        "disable_dev_char_symlink_creation",
        ("--disable-dev-char-symlink-creation",),
        "DISABLE_DEV_CHAR_SYMLINK_CREATION",
        False,
        "do not create /dev/char symlinks for the NVIDIA devices",
    ),
    _option("host_root", ("--host-root",), "HOST_ROOT", "/", "the host's root path, on the host"),
    _option(
        "driver_install_dir",
        ("--driver-install-dir",),
        "DRIVER_INSTALL_DIR",
        DEFAULT_DRIVER_INSTALL_DIR,
        "where the containerized driver is installed, on the host",
    ),
    _option(
        "driver_install_dir_ctr_path",
        ("--driver-install-dir-ctr-path",),
        "DRIVER_INSTALL_DIR_CTR_PATH",
        DEFAULT_DRIVER_INSTALL_DIR,
        "where that install dir is mounted in this container",
    ),
    _flag(
        "driver_validation_skip_gpu_init",
        ("--driver-validation-skip-gpu-init",),
        "DRIVER_VALIDATION_SKIP_GPU_INIT",
        False,
        "validate the driver without initialising the GPUs (GPUs bound to vfio-pci)",
    ),
    _flag(
        "skip_validation",
        ("--skip-validation",),
        "SKIP_VALIDATION",
        False,
        "only create the status file (toolkit, cuda, plugin)",
    ),
    _option(
        "nvml",
        ("--nvml",),
        NVML_ENV,
        "auto",
        "NVML to use: 'auto' (the driver's) or 'fake:<profile>' (a simulated node)",
    ),
    _option("validator_image", (), "VALIDATOR_IMAGE", "", "image of the workload pods"),
    _option("validator_image_pull_policy", (), "VALIDATOR_IMAGE_PULL_POLICY", "", "pull policy of the workload pods"),
    _option(
        "validator_image_pull_secrets",
        (),
        "VALIDATOR_IMAGE_PULL_SECRETS",
        (),
        "pull secrets of the workload pods (comma-separated)",
        _strings,
    ),
    _option("validator_runtime_class", (), "VALIDATOR_RUNTIME_CLASS", "", "runtime class of the workload pods"),
    _option(
        "gpu_direct_rdma_enabled", (), "GPU_DIRECT_RDMA_ENABLED", "", "'true' when GPUDirect RDMA is enabled (mofed)"
    ),
    _option("use_host_mofed", (), "USE_HOST_MOFED", "", "'true' when MOFED is installed on the host (mofed)"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, resolved."""

    component: str = ""
    with_wait: bool = False
    with_workload: bool = True
    cleanup_all: bool = False
    output_dir: str = DEFAULT_OUTPUT_DIR
    sleep_interval_seconds: int = 5
    mig_strategy: str = "single"
    node_name: str = ""
    namespace: str = ""
    kubeconfig: str = ""
    metrics_port: int = 0
    default_gpu_workload_config: str = ""
    disable_dev_char_symlink_creation: bool = False
    host_root: str = "/"
    driver_install_dir: str = DEFAULT_DRIVER_INSTALL_DIR
    driver_install_dir_ctr_path: str = DEFAULT_DRIVER_INSTALL_DIR
    driver_validation_skip_gpu_init: bool = False
    skip_validation: bool = False
    nvml: str = "auto"
    validator_image: str = ""
    validator_image_pull_policy: str = ""
    validator_image_pull_secrets: tuple[str, ...] = ()
    validator_runtime_class: str = ""
    gpu_direct_rdma_enabled: str = ""
    use_host_mofed: str = ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags; unset flags stay None so that the environment can decide."""
    options.add_arguments(parser, OPTIONS)


def resolve_settings(cli: Mapping[str, str | None], environ: Mapping[str, str]) -> Settings:
    """Settings from parsed flags (name -> text or None) and the environment."""
    return Settings(**options.resolve(OPTIONS, cli, environ, SettingsError))
