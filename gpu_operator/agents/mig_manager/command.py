"""`gpu-operator-agent mig-manager`: NVIDIA's nvidia-mig-manager, driven by the node's `nvidia.com/mig.config`.

Flags and environment are nvidia-mig-manager's: `--node-name`/`NODE_NAME`, `--config-file`/`CONFIG_FILE`
(without one, a config generated from the GPUs, written to `--generated-config-file`; only when the MIG-capable
GPUs list no MIG profile at all, as older drivers do while MIG is off, the `DEFAULT_CONFIG_FILE` instead),
`POD_NAMESPACE` for the operand pods, `GPU_CLIENTS_FILE`, `HOST_KUBELET_SYSTEMD_SERVICE` (stopped with the host
clients across a MIG mode change), plus `--nvml` and `--poll-interval`; `WITH_REBOOT=true` lets a reboot finish
a MIG mode change (:mod:`.host`). The generated config is also published as ConfigMap `<node>-mig-config`
(key `config.yaml`) in `POD_NAMESPACE`, labelled with the component and the node and owned by this pod
(`POD_NAME`), so it goes with the pod; `CDI_ENABLED=true` refreshes CDI after each change (:mod:`.cdi`). It
waits for the driver validation's `driver-ready` file and takes the driver paths it records, applies the label
found at start, then polls the node and applies each new non-empty value. `WITH_SHUTDOWN_HOST_GPU_CLIENTS=true`
stops the host services `GPU_CLIENTS_FILE` lists around each change (:mod:`.host_clients`); unset, it follows
`IS_HOST_DRIVER` from `driver-ready`, as NVIDIA's entrypoint does (only a host driver has host clients).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpu_operator.agents.kube.client import KubeClient
from gpu_operator.agents.device_plugin.driver_ready import read_driver_ready
from gpu_operator.agents.kube.errors import AlreadyExists, KubeError
from gpu_operator.agents.kube.resources import CONFIG_MAPS, NODES, PODS
from gpu_operator.agents.mig_manager.cdi import CdiRefresh
from gpu_operator.agents.mig_manager.config import (
    MigConfigError,
    MigPartedConfig,
    load_config,
    parse_config,
)
from gpu_operator.agents.mig_manager.generated import generated_config
from gpu_operator.agents.mig_manager.hardware import MigHardware
from gpu_operator.agents.mig_manager.host import HostActions
from gpu_operator.agents.mig_manager.host_clients import HostClientsError, HostGpuClients, Runner, load_clients
from gpu_operator.agents.mig_manager.reconfigure import CONFIG_LABEL, Reconfigurer, Settings
from gpu_operator.agents.nvml.selection import open_nvml
from gpu_operator.agents.nvml.underlying import library_of
from gpu_operator.mig import to_yaml

__all__ = ["build_parser", "main"]

PROGRAM = "gpu-operator-agent mig-manager"
_log = logging.getLogger(__name__)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Apply the MIG layout nvidia.com/mig.config names.")
    parser.add_argument("--node-name", help="this node (env NODE_NAME)")
    parser.add_argument("--namespace", help="namespace of the operand pods (env POD_NAMESPACE)")
    parser.add_argument("--config-file", help="mig-parted config file (env CONFIG_FILE)")
    parser.add_argument("--default-config-file", help="fallback config file (env DEFAULT_CONFIG_FILE)")
    parser.add_argument(
        "--generated-config-file",
        default="/etc/nvidia-mig-manager/generated-config.yaml",
        help="where the config generated from the GPUs is written",
    )
    parser.add_argument(
        "--host-kubelet-systemd-service",
        help="the host's kubelet unit, stopped across a MIG mode change with the host GPU clients "
        "(env HOST_KUBELET_SYSTEMD_SERVICE; default kubelet.service; empty: never)",
    )
    parser.add_argument("--validations-dir", default="/run/nvidia/validations", help="driver-ready directory")
    parser.add_argument("--nvml", default="auto", help="auto, or fake:<profile> for a simulated node")
    parser.add_argument("--poll-interval", type=float, default=5.0, help="seconds between reads of the node")
    parser.add_argument("--once", action="store_true", help="apply the current label and exit")
    return parser


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise MigConfigError(f"{name}={env[name]!r}: expected true or false")


def _config(
    args: argparse.Namespace, env: Mapping[str, str], hardware: MigHardware
) -> tuple[MigPartedConfig, str | None]:
    """The config to apply, and the generated text to publish (None when a file was given).

    As nvidia-mig-manager's setupMigConfig: `CONFIG_FILE` when given; otherwise the config generated from the
    GPUs; the default file only when the MIG-capable GPUs list no profile to generate from.
    """
    path = args.config_file or env.get("CONFIG_FILE")
    if path:
        return load_config(path), None
    capable = [gpu for gpu in hardware.gpus() if gpu.capable]
    if not capable:
        raise MigConfigError("no MIG-capable GPU on this node to generate a MIG config for; "
                             "set CONFIG_FILE to a mig-parted config, or run the MIG manager on MIG-capable nodes")
    if not any(hardware.profiles(gpu.index) for gpu in capable):
        fallback = args.default_config_file or env.get("DEFAULT_CONFIG_FILE")
        if not fallback:
            raise MigConfigError("the MIG-capable GPUs list no MIG profile (older drivers list none while MIG is "
                                 "off) and DEFAULT_CONFIG_FILE is not set: set it, or CONFIG_FILE")
        _log.warning("no MIG profile discovered on the GPUs; using the default config %s", fallback)
        return load_config(fallback), None
    text = to_yaml(generated_config(hardware))
    try:
        Path(args.generated_config_file).parent.mkdir(parents=True, exist_ok=True)
        Path(args.generated_config_file).write_text(text)
    except OSError as error:
        _log.warning("could not write %s: %s", args.generated_config_file, error.strerror)
    return parse_config(text, "generated config"), text


def _publish(client: KubeClient, node: str, namespace: str, pod_name: str, text: str) -> None:
    """ConfigMap `<node>-mig-config` (key `config.yaml`): the generated layouts, for users to read and pick from.

    Labelled `app.kubernetes.io/component=nvidia-mig-manager` and `nvidia.com/node-name=<node>`, and owned by this
    pod, so the garbage collector removes it with the pod (a node that leaves leaves no ConfigMap behind); an
    existing one gets this pod as its owner.
    """
    pod = client.get(PODS, pod_name, namespace)
    metadata = {
        "name": f"{node}-mig-config",
        "namespace": namespace,
        "labels": {"app.kubernetes.io/component": "nvidia-mig-manager", "nvidia.com/node-name": node},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": pod["metadata"]["uid"]},
        ],
    }
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"config.yaml": text}}
    try:
        client.create(CONFIG_MAPS, body, namespace)
    except AlreadyExists:
        change = {"metadata": {k: metadata[k] for k in ("labels", "ownerReferences")}, "data": body["data"]}
        client.patch(CONFIG_MAPS, metadata["name"], change, namespace)


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    kube: KubeClient | None = None,
    host_runner: Runner | None = None,
) -> int:
    """Run the MIG manager; `kube` and `host_runner` (commands in the host's root) replace the real ones in tests."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    env = dict(os.environ if environ is None else environ)
    args = build_parser().parse_args(argv)
    node = args.node_name or env.get("NODE_NAME")
    namespace = args.namespace or env.get("POD_NAMESPACE")
    try:
        if not node:
            raise MigConfigError("the node is unknown: set NODE_NAME (the pod's spec.nodeName) or --node-name")
        if not namespace:
            raise MigConfigError("the operand namespace is unknown: set POD_NAMESPACE or --namespace")
        shutdown_given = "WITH_SHUTDOWN_HOST_GPU_CLIENTS" in env
        with_shutdown = _flag(env, "WITH_SHUTDOWN_HOST_GPU_CLIENTS")
        with_reboot = _flag(env, "WITH_REBOOT")
        with_cdi = _flag(env, "CDI_ENABLED")
        kubelet_service = args.host_kubelet_systemd_service
        if kubelet_service is None:
            kubelet_service = env.get("HOST_KUBELET_SYSTEMD_SERVICE", "kubelet.service")
        ready = Path(args.validations_dir) / "driver-ready"
        if args.nvml == "auto":
            while not ready.exists():
                _log.info("waiting for %s", ready)
                time.sleep(args.poll_interval)
        if ready.exists():
            env.update(read_driver_ready(str(ready)))
        if not shutdown_given and "IS_HOST_DRIVER" in env:
            with_shutdown = _flag(env, "IS_HOST_DRIVER")
        host_clients = None
        if with_shutdown:
            host_clients = HostGpuClients(load_clients(env.get("GPU_CLIENTS_FILE")))
            if host_runner is not None:
                host_clients.runner = host_runner
        library = library_of(open_nvml(args.nvml, environ=env))
        if library is None:
            raise MigConfigError("no NVML library on this node")
        hardware = MigHardware(library)
        config, generated = _config(args, env, hardware)
    except (MigConfigError, HostClientsError, ValueError, OSError) as error:
        sys.stderr.write(f"{PROGRAM}: {error}\n")
        return 2
    try:
        client = kube or KubeClient.from_environment(env)
    except KubeError as error:
        sys.stderr.write(f"{PROGRAM}: cannot reach the Kubernetes API: {error}\n")
        return 2
    pod_name = env.get("POD_NAME", "")
    if generated is not None and not pod_name:
        _log.warning("POD_NAME is not set: ConfigMap %s-mig-config is not published (it is owned by this pod)", node)
    elif generated is not None:
        try:
            _publish(client, node, namespace, pod_name, generated)
        except KubeError as error:
            _log.warning("could not publish ConfigMap %s-mig-config: %s", node, error)
    runner = {} if host_runner is None else {"runner": host_runner}
    after_apply = CdiRefresh.from_environment(env, **runner) if with_cdi else None
    host = HostActions(env.get("NVIDIA_DRIVER_ROOT") or "/", **runner)
    reconfigurer = Reconfigurer(
        client,
        hardware,
        config,
        Settings(node, namespace, with_reboot=with_reboot, kubelet_service=kubelet_service),
        after_apply=after_apply,
        reset=host.reset_gpus,
        reboot=host.reboot,
        host_clients=host_clients,
    )
    applied: str | None = None
    while True:
        try:
            labels = (client.get(NODES, node).get("metadata") or {}).get("labels") or {}
            wanted = labels.get(CONFIG_LABEL, "")
            if wanted and wanted != applied:
                _log.info("%s=%s", CONFIG_LABEL, wanted)
                reconfigurer.reconfigure(wanted)
                applied = wanted
        except KubeError as error:
            _log.warning("node %s: %s", node, error)
        if args.once:
            return 0
        time.sleep(args.poll_interval)
