"""MOFED readiness of the InfiniBand nodes, read from the label the Network Operator keeps on each node.

The Network Operator sets `network.nvidia.com/operator.mofed.wait` on every node labelled
`feature.node.kubernetes.io/pci-15b3.present=true`: `true` while the node's MOFED driver pod is not ready, `false`
once it is (and `false` at once when no `ofedDriver` is configured, i.e. host MOFED). Its RDMA device plugins
schedule only where it is `false`; Azure's install scripts poll the same label before installing the GPU operator.

MOFED is ready when at least the expected number of InfiniBand nodes exist (the IB pools' initial node counts:
before NFD has labelled a node there is nothing to count, and zero labelled nodes must not read as "ready") and
every one of them carries `false`. A node without the label counts as waiting: the operator has not reached it.

The label alone does not say which MOFED: the operator sets it from the readiness of whatever driver pod runs on
the node (Mellanox/network-operator v26.4.1 controllers/mofed_wait_labels.go `processOFEDPodsForWaitLabels`),
and its driver DaemonSets update `OnDelete` (manifests/state-ofed-driver/0050_ofed-driver-ds.yaml), so after a
version change the old pods stay ready, and the label `false`, until the upgrade reaches each node. Given the
driver image the NicClusterPolicy asks for, a node is ready only once its driver pod (label
`nvidia.com/ofed-driver`) runs that version in a ready `mofed-container`; once the namespace has driver pods, an
IB node without one is waiting for it too. (The operator names the image `<repository>/<image>:<version>-<os>-
<arch>`, with the kernel before the OS when precompiled, or `<repository>/<image>@<digest>`: pkg/state/
state_ofed.go `getMofedDriverImageName`.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AGENT_POOL_LABEL",
    "DriverImage",
    "IB_NODE_LABEL",
    "MOFED_CONTAINER",
    "MOFED_POD_LABEL",
    "MOFED_WAIT_LABEL",
    "MofedNotReady",
    "MofedPod",
    "MofedReadiness",
    "NodeLabels",
    "kubeconfig_mofed_pod_lister",
    "kubeconfig_node_lister",
    "mofed_readiness",
    "wait_for_mofed",
]

#: The label NFD puts on nodes with a Mellanox InfiniBand VF (our NodeFeatureRule's output).
IB_NODE_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
#: The Network Operator's per-node MOFED gate.
MOFED_WAIT_LABEL = "network.nvidia.com/operator.mofed.wait"
#: The AKS agent pool a node belongs to.
AGENT_POOL_LABEL = "kubernetes.azure.com/agentpool"

#: The label of the Network Operator's MOFED driver pods, and their driver container.
MOFED_POD_LABEL = "nvidia.com/ofed-driver"
MOFED_CONTAINER = "mofed-container"

#: A node as this module needs it: its name and labels.
NodeLabels = tuple[str, Mapping[str, str]]
#: A MOFED driver pod as this module needs it: its node, the image of its `mofed-container`, whether that is ready.
MofedPod = tuple[str, str, bool]


@dataclass(frozen=True)
class DriverImage:
    """The DOCA-OFED driver image a NicClusterPolicy asks for (`ofedDriver.repository/image/version`)."""

    repository: str
    image: str
    version: str

    def runs_in(self, reference: str) -> bool:
        """Whether a pod's image reference is this driver, whatever OS, kernel and architecture suffix it has."""
        base = f"{self.repository}/{self.image}"
        return reference == f"{base}@{self.version}" or reference.startswith(f"{base}:{self.version}-")

    def describe(self) -> str:
        return f"{self.repository}/{self.image}:{self.version}"


@dataclass(frozen=True)
class MofedReadiness:
    """Which InfiniBand nodes have MOFED loaded, and whether that is all of them."""

    expected_nodes: int
    ready_nodes: tuple[str, ...]
    waiting_nodes: tuple[str, ...]
    outdated_nodes: tuple[str, ...] = ()
    """Waiting nodes whose MOFED is ready but not (yet) the version asked for."""

    @property
    def ready(self) -> bool:
        return not self.waiting_nodes and len(self.ready_nodes) >= self.expected_nodes

    def describe(self) -> str:
        seen = len(self.ready_nodes) + len(self.waiting_nodes)
        parts = [f"MOFED ready on {len(self.ready_nodes)} of {seen} InfiniBand node(s) "
                 f"(expected at least {self.expected_nodes})"]
        if self.waiting_nodes:
            shown = ", ".join(self.waiting_nodes[:10]) + (" ..." if len(self.waiting_nodes) > 10 else "")
            parts.append(f"waiting: {shown}")
        if self.outdated_nodes:
            shown = ", ".join(self.outdated_nodes[:10]) + (" ..." if len(self.outdated_nodes) > 10 else "")
            parts.append(f"still on the previous MOFED: {shown}")
        return "; ".join(parts)


class MofedNotReady(TimeoutError):
    """MOFED did not become ready on every InfiniBand node in time; carries the last observation."""

    def __init__(self, readiness: MofedReadiness, timeout_seconds: float) -> None:
        super().__init__(
            f"{readiness.describe()} after {timeout_seconds:g} s. Check the MOFED pods "
            "(kubectl -n network-operator get pods -l nvidia.com/ofed-driver -o wide; their logs show the "
            "compile or `openibd restart` failure), or raise network.mofedTimeoutSeconds"
        )
        self.readiness = readiness


def mofed_readiness(
    nodes: Iterable[NodeLabels],
    expected_nodes: int,
    pods: Iterable[MofedPod] | None = None,
    wanted: DriverImage | None = None,
) -> MofedReadiness:
    """The readiness of the InfiniBand nodes among `nodes` (others are ignored).

    With `wanted` and the driver `pods`, a node whose label says ready also needs a ready driver pod of that
    version (a node without a driver pod counts as ready only while the namespace has none at all).
    """
    by_node: dict[str, list[tuple[str, bool]]] = {}
    for node, image, ready in pods or ():
        by_node.setdefault(node, []).append((image, ready))
    ready: list[str] = []
    waiting: list[str] = []
    outdated: list[str] = []
    for name, labels in nodes:
        if labels.get(IB_NODE_LABEL) != "true":
            continue
        if labels.get(MOFED_WAIT_LABEL) != "false":
            waiting.append(name)
        elif wanted is None or not by_node:
            ready.append(name)
        elif any(wanted.runs_in(image) and up for image, up in by_node.get(name, ())):
            ready.append(name)
        else:
            waiting.append(name)
            outdated.append(name)
    return MofedReadiness(expected_nodes, tuple(sorted(ready)), tuple(sorted(waiting)), tuple(sorted(outdated)))


def wait_for_mofed(
    list_nodes: Callable[[], Iterable[NodeLabels]],
    expected_nodes: int,
    timeout_seconds: float,
    poll_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    list_pods: Callable[[], Iterable[MofedPod]] | None = None,
    wanted: DriverImage | None = None,
) -> MofedReadiness:
    """Poll until MOFED is ready on every InfiniBand node; raise :class:`MofedNotReady` at the deadline.

    With `list_pods` and `wanted`, ready means running that driver version (see the module docstring). A failing
    list (API server unreachable for a moment) is retried until the deadline, then re-raised.
    """
    deadline = clock() + timeout_seconds
    while True:
        try:
            pods = list(list_pods()) if list_pods is not None and wanted is not None else None
            readiness = mofed_readiness(list_nodes(), expected_nodes, pods, wanted)
        except Exception:
            if clock() >= deadline:
                raise
        else:
            if readiness.ready:
                return readiness
            if clock() >= deadline:
                raise MofedNotReady(readiness, timeout_seconds)
        sleep(max(0.0, min(poll_seconds, deadline - clock())))


def kubeconfig_node_lister(
    kubeconfig: str | Mapping[str, Any],
    pools: Sequence[str] = (),
    context: str | None = None,
    trust_env: bool = True,
) -> Callable[[], list[NodeLabels]]:
    """A lister of the InfiniBand nodes (name, labels) through the Kubernetes API, from a kubeconfig document.

    Only nodes carrying the IB label are listed (a server-side label selector), so a large CPU fleet costs
    nothing; with `pools`, only those of these AKS agent pools (`kubernetes.azure.com/agentpool`), so IB nodes
    another stack manages do not hold this one up. Needs `list` on nodes. `trust_env` as in httpx: honour the
    proxy variables of the environment.
    """
    import yaml
    from lightkube import Client, KubeConfig
    from lightkube.operators import in_
    from lightkube.resources.core_v1 import Node

    document = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else dict(kubeconfig)
    client = Client(KubeConfig.from_dict(document).get(context_name=context), trust_env=trust_env)
    selector: dict[str, Any] = {IB_NODE_LABEL: "true"}
    if pools:
        selector[AGENT_POOL_LABEL] = in_(sorted(pools))

    def list_nodes() -> list[NodeLabels]:
        return [(node.metadata.name, dict(node.metadata.labels or {})) for node in client.list(Node, labels=selector)]

    return list_nodes


def kubeconfig_mofed_pod_lister(
    kubeconfig: str | Mapping[str, Any],
    namespace: str,
    context: str | None = None,
    trust_env: bool = True,
) -> Callable[[], list[MofedPod]]:
    """A lister of the Network Operator's MOFED driver pods in `namespace` (node, driver image, ready), from a
    kubeconfig document. Needs `list` on pods in that namespace."""
    import yaml
    from lightkube import Client, KubeConfig
    from lightkube.resources.core_v1 import Pod

    document = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else dict(kubeconfig)
    client = Client(KubeConfig.from_dict(document).get(context_name=context), trust_env=trust_env)

    def list_pods() -> list[MofedPod]:
        found: list[MofedPod] = []
        for pod in client.list(Pod, namespace=namespace, labels={MOFED_POD_LABEL: ""}):
            node = pod.spec.nodeName if pod.spec is not None else None
            if not node:
                continue
            image = next((c.image or "" for c in pod.spec.containers if c.name == MOFED_CONTAINER), "")
            statuses = (pod.status.containerStatuses if pod.status is not None else None) or []
            ready = any(status.name == MOFED_CONTAINER and status.ready for status in statuses)
            found.append((node, image, ready))
        return found

    return list_pods
