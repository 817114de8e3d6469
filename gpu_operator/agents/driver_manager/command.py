"""`gpu-operator-agent driver-manager uninstall_driver`: NVIDIA's k8s-driver-manager, the driver pod's init container.

It gets ready the node for the driver container: it pauses the other operands through their deploy labels,
evicts the GPU pods (or drains the node) when asked, unloads the old driver, cleans what the old driver container
left, then restores the operands (see :mod:`.plan` for the order and the routes). Exit status: 0 when the driver
container may start, 1 when it must not (a host driver, or a failure: the labels are restored and a node this
program cordoned is uncordoned first), 2 for bad settings or no way to reach the API server.

Flags and environment are NVIDIA's (:mod:`.settings`); the Kubernetes credentials are the pod's service account,
or the kubeconfig `KUBECONFIG` names.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence

from lightkube import Client, ConfigError, KubeConfig

from gpu_operator.agents.driver_manager.host import HostActions, HostProbe
from gpu_operator.agents.driver_manager.kube import FIELD_MANAGER, NodeApi
from gpu_operator.agents.driver_manager.run import DriverManager
from gpu_operator.agents.driver_manager.settings import SettingsError, load_settings
from gpu_operator.agents.kube.connect import connect
from gpu_operator.agents.mig_manager.host_commands import Runner, command_runner
from gpu_operator.agents.signals import SignalQueue, SignalSource

__all__ = ["PROGRAM", "kube_client", "main"]

PROGRAM = "gpu-operator-agent driver-manager"
#: How long one host command (nvidia-smi, rmmod, umount) may run.
COMMAND_TIMEOUT_SECONDS = 120.0


def kube_client(environ: Mapping[str, str]) -> Client:
    """The pod's service account, else the kubeconfig KUBECONFIG names (else ~/.kube/config), sending through
    the agents' one retry policy."""
    try:
        config = KubeConfig.from_service_account()
    except ConfigError:
        config = KubeConfig.from_file(environ.get("KUBECONFIG") or "~/.kube/config")
    return connect(config.get(), field_manager=FIELD_MANAGER)


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    client: Client | None = None,
    runner: Runner | None = None,
    signals: SignalSource | None = None,
) -> int:
    """Run the driver manager; `client`, `runner` and `signals` replace the real ones in tests."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    for library in ("httpx", "httpx2", "httpcore"):  # one line per request otherwise; our own log says what it does
        logging.getLogger(library).setLevel(logging.WARNING)
    env = os.environ if environ is None else environ
    try:
        _, settings = load_settings(sys.argv[1:] if argv is None else argv, env)
    except SettingsError as error:
        sys.stderr.write(f"{PROGRAM}: {error}\n")
        return 2
    except SystemExit as exit_:  # argparse: --help, or a flag it refused (it printed why)
        return int(exit_.code or 0)
    try:
        kube = client or kube_client(env)
    except (ConfigError, OSError) as error:
        sys.stderr.write(f"{PROGRAM}: cannot configure the Kubernetes client: {error}\n")
        return 2
    run = runner or command_runner(COMMAND_TIMEOUT_SECONDS)

    def manager(source: SignalSource) -> DriverManager:
        return DriverManager(
            settings=settings,
            api=NodeApi(kube, settings.node_name),
            probe=HostProbe(settings.root, run, use_host_mofed=settings.use_host_mofed),
            host=HostActions(settings.root, run),
            signals=source,
        )

    if signals is not None:
        return manager(signals).run()
    with SignalQueue() as queue:
        return manager(queue).run()
