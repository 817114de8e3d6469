"""The metrics exporter's settings: dcgm-exporter's flags and environment variables, plus this agent's own.

Each setting is a row of :data:`OPTIONS` - flags, environment variables, parser and default - and is taken from
the command line, else the first variable set, else the default (dcgm-exporter's urfave/cli precedence).
Booleans and lists are spelled as dcgm-exporter spells them (`true`, `1`, `false`; comma-separated lists).

Settings that only make sense with DCGM are accepted so the upstream DaemonSet env keeps working:
`--remote-hostengine-info` (NVML is read in-process) and `--configmap-data` (the DaemonSet mounts the same
ConfigMap as the `--collectors` file, which is what is read). `--web-config-file` (TLS and basic auth) is not
supported and refused, rather than silently serving plain HTTP.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_operator.agents.exposition import ListenAddress, parse_listen_address
from gpu_operator.agents.kubelet import DEFAULT_POD_RESOURCES_SOCKET
from gpu_operator.agents.metrics_exporter.counters import DEFAULT_COLLECTORS
from gpu_operator.agents.metrics_exporter.entities import GPU_ID_TYPES, UID
from gpu_operator.agents.nvml import NVML_ENV
from gpu_operator.agents import options
from gpu_operator.agents.options import Option, flag_option

__all__ = ["OPTIONS", "Option", "Settings", "SettingsError", "add_arguments", "resolve_settings"]

DEFAULT_INTERVAL_MS = 30000


class SettingsError(ValueError):
    """A flag or variable value the exporter refuses."""


def _interval(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be a positive number of milliseconds")
    return value


def _id_type(text: str) -> str:
    if text not in GPU_ID_TYPES:
        raise ValueError(f"must be one of {', '.join(GPU_ID_TYPES)}")
    return text


def _absolute(text: str) -> str:
    if not os.path.isabs(text):
        raise ValueError("must be an absolute path")
    return text


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _unsupported(text: str) -> str:
    if text:
        raise ValueError("TLS and basic-auth web configuration is not supported by this exporter")
    return text


_flag = flag_option


OPTIONS: tuple[Option, ...] = (
    Option("collectors", ("-f", "--collectors"), ("DCGM_EXPORTER_COLLECTORS",), str, DEFAULT_COLLECTORS,
           "the CSV of fields to collect"),
    Option("address", ("-a", "--address"), ("DCGM_EXPORTER_LISTEN",), parse_listen_address,
           parse_listen_address(":9400"), "where to serve /metrics and /health (HOST:PORT or :PORT)"),
    Option("collect_interval_ms", ("-c", "--collect-interval"), ("DCGM_EXPORTER_INTERVAL",), _interval,
           DEFAULT_INTERVAL_MS, "milliseconds between collections"),
    _flag("kubernetes", ("-k", "--kubernetes"), "DCGM_EXPORTER_KUBERNETES", False,
          "label the series of GPUs used by pods with pod, namespace and container"),
    Option("gpu_id_type", ("--kubernetes-gpu-id-type",), ("DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE",), _id_type, UID,
           "how the device plugin names GPUs: uid or device-name"),
    _flag("pod_labels", ("--kubernetes-enable-pod-labels",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", False,
          "add the labels of the pod using a GPU (reads pods from the API server)"),
    _flag("pod_uid", ("--kubernetes-enable-pod-uid",), "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", False,
          "add the UID of the pod using a GPU as pod_uid (reads pods from the API server)"),
    Option("pod_label_allowlist", ("--kubernetes-pod-label-allowlist-regex",),
           ("DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",), _names, (),
           "comma-separated regular expressions; only matching pod label keys are added"),
    _flag("virtual_gpus", ("--kubernetes-virtual-gpus",), "KUBERNETES_VIRTUAL_GPUS", False,
          "one series per container sharing a GPU (time-slicing, MPS), with its replica in vgpu, its pod_uid and "
          "its own share of GPU_UTIL and FB_USED (needs hostPID and reads pods from the API server)"),
    Option("proc_root", ("--proc-root",), ("DCGM_EXPORTER_PROC_ROOT",), _absolute, "/proc",
           "where /proc/<pid>/cgroup is read to find the pod of a GPU process (--kubernetes-virtual-gpus)"),
    Option("pod_resources_socket", ("--pod-resources-kubelet-socket",), ("DCGM_POD_RESOURCES_KUBELET_SOCKET",),
           _absolute, DEFAULT_POD_RESOURCES_SOCKET, "the kubelet's pod-resources socket"),
    Option("resource_names", ("--nvidia-resource-names",), ("NVIDIA_RESOURCE_NAMES",), _names, (),
           "comma-separated extra resource names that denote NVIDIA GPUs"),
    _flag("use_old_namespace", ("--use-old-namespace",), "DCGM_EXPORTER_USE_OLD_NAMESPACE", False,
          "use the old label names (uuid, pod_name, pod_namespace, container_name)"),
    _flag("no_hostname", ("--no-hostname",), "DCGM_EXPORTER_NO_HOSTNAME", False, "leave out the hostname label"),
    _flag("replace_blanks", ("--replace-blanks-in-model-name",), "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME",
          False, "replace spaces in modelName with dashes"),
    Option("hpc_job_dir", ("--hpc-job-mapping-dir",), ("DCGM_HPC_JOB_MAPPING_DIR",), str, "",
           "a directory of per-GPU job files; adds hpc_job labels"),
    Option("remote_hostengine", ("-r", "--remote-hostengine-info"), ("DCGM_REMOTE_HOSTENGINE_INFO",), str,
           "localhost:5555", "accepted for compatibility; NVML is read in-process"),
    Option("configmap_data", ("-m", "--configmap-data"), ("DCGM_EXPORTER_CONFIGMAP_DATA",), str, "none",
           "accepted for compatibility; the mounted --collectors file is read"),
    Option("web_config_file", ("--web-config-file",), ("DCGM_EXPORTER_WEB_CONFIG_FILE",), _unsupported, "",
           "not supported (TLS / basic auth)"),
    _flag("fail_on_init_error", ("--fail-on-init-error",), "FAIL_ON_INIT_ERROR", True,
          "exit when NVML cannot start; otherwise serve a node without GPUs"),
    Option("nvml", ("--nvml",), (NVML_ENV,), str, "auto", "NVML to use: 'auto' or 'fake:<profile>'"),
    Option("node_name", ("--node-name",), ("NODE_NAME",), str, "", "the node's name (the hostname label)"),
)


@dataclass(frozen=True, slots=True)
class Settings:
    collectors: str = DEFAULT_COLLECTORS
    address: ListenAddress = field(default_factory=lambda: ListenAddress("", 9400))
    collect_interval_ms: int = DEFAULT_INTERVAL_MS
    kubernetes: bool = False
    gpu_id_type: str = UID
    pod_labels: bool = False
    pod_uid: bool = False
    pod_label_allowlist: tuple[str, ...] = ()
    virtual_gpus: bool = False
    proc_root: str = "/proc"
    pod_resources_socket: str = DEFAULT_POD_RESOURCES_SOCKET
    resource_names: tuple[str, ...] = ()
    use_old_namespace: bool = False
    no_hostname: bool = False
    replace_blanks: bool = False
    hpc_job_dir: str = ""
    remote_hostengine: str = "localhost:5555"
    configmap_data: str = "none"
    web_config_file: str = ""
    fail_on_init_error: bool = True
    nvml: str = "auto"
    node_name: str = ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option's flags; unset flags stay None so the environment can decide."""
    options.add_arguments(parser, OPTIONS)


def resolve_settings(cli: Mapping[str, str | None], environ: Mapping[str, str]) -> Settings:
    """Settings from parsed flags (name -> text or None) and the environment."""
    return Settings(**options.resolve(OPTIONS, cli, environ, SettingsError))
