"""MOFED readiness against the real API server: the dynamic provider's create waits on the nodes' labels.

Three InfiniBand nodes of a pool `ibwait` (and one IB node of another pool, which must not hold this stack up)
start with `network.nvidia.com/operator.mofed.wait=true`, as the Network Operator sets it while MOFED compiles.
The provider's create, as `pulumi up` runs it, is polling when the nodes turn `false` one by one; it returns
only after the last one, with every node named. With a node still waiting at the deadline, it fails naming it.
The provider reads the nodes with a token that may only list nodes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding
from lightkube.resources.core_v1 import ServiceAccount

from gpu_operator.components.mofed_readiness import MofedReadinessProvider
from gpu_operator.readiness import AGENT_POOL_LABEL, IB_NODE_LABEL, MOFED_WAIT_LABEL
from tests.e2e.agents import service_account_token
from tests.e2e.control_plane import ControlPlane, kubeconfig

pytestmark = pytest.mark.e2e

POOL = "ibwait"
NODES = [f"aks-{POOL}-0000{i}" for i in range(3)]
OTHER = "aks-otherib-00000"
ACCOUNT = ("default", "mofed-readiness")


def _node(name: str, pool: str) -> Node:
    return Node.from_dict({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {IB_NODE_LABEL: "true", AGENT_POOL_LABEL: pool, MOFED_WAIT_LABEL: "true"}},
    })


def _set_wait(admin: Client, name: str, value: str) -> None:
    admin.patch(Node, name, {"metadata": {"labels": {MOFED_WAIT_LABEL: value}}})


@pytest.fixture
def ib_nodes(admin: Client) -> Iterator[None]:
    for name in NODES:
        admin.create(_node(name, POOL))
    admin.create(_node(OTHER, "otherib"))
    try:
        yield
    finally:
        for name in [*NODES, OTHER]:
            admin.delete(Node, name)


@pytest.fixture(scope="module")
def list_nodes_kubeconfig(admin: Client, control_plane: ControlPlane) -> str:
    """A kubeconfig whose holder may only list nodes (what the provider needs)."""
    namespace, name = ACCOUNT
    admin.create(ServiceAccount.from_dict({"metadata": {"name": name, "namespace": namespace}}))
    admin.create(ClusterRole.from_dict({
        "metadata": {"name": name}, "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}))
    admin.create(ClusterRoleBinding.from_dict({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]}))
    token = service_account_token(admin, namespace, name)
    return yaml.safe_dump(kubeconfig(control_plane.server, control_plane.ca_file, token))


def _props(config: str, timeout: int) -> dict:
    return {"kubeconfig": config, "pools": [POOL], "expectedNodes": len(NODES), "policyDigest": "abc",
            "timeoutSeconds": timeout, "pollSeconds": 0.2}


def test_create_returns_once_the_last_ib_node_reports_mofed_ready(
    admin: Client, ib_nodes: None, list_nodes_kubeconfig: str
) -> None:
    finished: list[float] = []
    flipped: list[float] = []

    def operator() -> None:
        for name in NODES:
            time.sleep(0.6)
            _set_wait(admin, name, "false")
            flipped.append(time.monotonic())

    flipper = threading.Thread(target=operator)
    flipper.start()
    try:
        result = MofedReadinessProvider().create(_props(list_nodes_kubeconfig, 60))
        finished.append(time.monotonic())
    finally:
        flipper.join(timeout=30)
    assert len(flipped) == len(NODES)
    assert finished[0] >= flipped[-1], "create returned before the last node reported MOFED ready"
    assert result.outs["ready"] is True
    assert result.outs["readyNodes"] == NODES  # the other stack's IB node, still waiting, is not counted


def test_create_fails_at_the_deadline_naming_the_node_still_waiting(
    admin: Client, ib_nodes: None, list_nodes_kubeconfig: str
) -> None:
    for name in NODES[:2]:
        _set_wait(admin, name, "false")
    with pytest.raises(RuntimeError) as raised:
        MofedReadinessProvider().create(_props(list_nodes_kubeconfig, 2))
    message = str(raised.value)
    assert message.startswith("network.waitForMofed:")
    assert f"waiting: {NODES[2]}" in message and OTHER not in message
