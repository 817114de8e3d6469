"""MOFED readiness of the InfiniBand nodes, read from the label the Network Operator keeps on each node.

The Network Operator sets `network.nvidia.com/operator.mofed.wait` on every node labelled
`feature.node.kubernetes.io/pci-15b3.present=true`: `true` while the node's MOFED driver pod is not ready, `false`
once it is (and `false` at once when no `ofedDriver` is configured, i.e. host MOFED). Its RDMA device plugins
schedule only where it is `false`; Azure's install scripts poll the same label before installing the GPU operator.

MOFED is ready when at least the expected number of InfiniBand nodes exist (the IB pools' initial node counts:
before NFD has labelled a node there is nothing to count, and zero labelled nodes must not read as "ready") and
every one of them carries `false`. A node without the label counts as waiting: the operator has not reached it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AGENT_POOL_LABEL",
    "IB_NODE_LABEL",
    "MOFED_WAIT_LABEL",
    "MofedNotReady",
    "MofedReadiness",
    "NodeLabels",
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

#: A node as this module needs it: its name and labels.
NodeLabels = tuple[str, Mapping[str, str]]


@dataclass(frozen=True)
class MofedReadiness:
    """Which InfiniBand nodes have MOFED loaded, and whether that is all of them."""

    expected_nodes: int
    ready_nodes: tuple[str, ...]
    waiting_nodes: tuple[str, ...]

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


def mofed_readiness(nodes: Iterable[NodeLabels], expected_nodes: int) -> MofedReadiness:
    """The readiness of the InfiniBand nodes among `nodes` (others are ignored)."""
    ready: list[str] = []
    waiting: list[str] = []
    for name, labels in nodes:
        if labels.get(IB_NODE_LABEL) != "true":
            continue
        (ready if labels.get(MOFED_WAIT_LABEL) == "false" else waiting).append(name)
    return MofedReadiness(expected_nodes, tuple(sorted(ready)), tuple(sorted(waiting)))


def wait_for_mofed(
    list_nodes: Callable[[], Iterable[NodeLabels]],
    expected_nodes: int,
    timeout_seconds: float,
    poll_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> MofedReadiness:
    """Poll until MOFED is ready on every InfiniBand node; raise :class:`MofedNotReady` at the deadline.

    A failing list (API server unreachable for a moment) is retried until the deadline, then re-raised.
    """
    deadline = clock() + timeout_seconds
    while True:
        try:
            readiness = mofed_readiness(list_nodes(), expected_nodes)
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
