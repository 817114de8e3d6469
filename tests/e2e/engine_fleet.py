"""The real engine's fleet for a test module: a control plane of its own, the simulated nodes, an `Engine`.

Each real-engine module gets its own control plane (its stacks install CRDs and charts that the session's shared
plane holds already) with the nodes of `fleet.yaml`'s pools, Ready under KWOK, and an
:class:`~tests.e2e.engine.Engine` with its own PULUMI_HOME and state. The stack runs in kubeconfig mode (no `aks`,
so no pools): the base document tolerates the pools' taint as a user's would and installs NFD's published chart
from a local path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Node

from gpu_operator.config import load_config
from tests.e2e.apply import KindTable, server_side_apply, wait_established
from tests.e2e.control_plane import ControlPlane, running_control_plane
from tests.e2e.engine import Engine, missing_engine_programs
from tests.e2e.nodes import FLEET_CONFIG, fleet_nodes, node_object
from tests.e2e.render_diff import ObjectKey
from tests.e2e.tools import E2eTools
from tests.e2e.waiting import wait_until
from tests.support.reference import REFERENCE_CHARTS, REFERENCE_DATA

__all__ = ["POOL_TAINT", "base_document", "chart_file", "cluster", "engine", "engine_plane", "exists",
           "install_prometheus_operator_crds", "live_kinds", "plane", "register_nodes", "require_engine"]

POOL_TAINT = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def chart_file(name: str) -> str:
    path = REFERENCE_CHARTS / name
    assert path.is_file(), f"the published chart {path} is missing (../shared/reference/charts)"
    return str(path)


def base_document() -> dict[str, Any]:
    """kubeconfig mode: no aks, no pools; the NFD chart from the shared charts; the pools' taint tolerated."""
    return {
        "namespace": "gpu-operator",
        "nfd": {"chart": {"path": chart_file("node-feature-discovery-0.19.0.tgz")}},
        "operator": {"daemonsets": {"tolerations": [POOL_TAINT]}},
    }


def require_engine(tools: E2eTools) -> None:
    """Fail the test at once, naming the fix, when the engine's programs are not built."""
    missing = missing_engine_programs(tools)
    if missing:
        pytest.fail(f"the engine's programs are not built ({', '.join(missing)}): run `make e2e-tools`", pytrace=False)


@contextmanager
def engine_plane(tools: E2eTools, workdir: Path) -> Iterator[ControlPlane]:
    """A control plane of a real-engine module's own, always stopped (the engine must be built)."""
    require_engine(tools)
    with running_control_plane(tools, workdir) as started:
        yield started


def register_nodes(client: Client, nodes: list[dict[str, Any]], timeout: float = 60) -> None:
    """Register simulated nodes and wait until KWOK reports each Ready."""
    failures = server_side_apply(client, nodes, KindTable(), dry_run=False)
    assert not failures, "\n".join(map(str, failures))
    names = {node["metadata"]["name"] for node in nodes}

    def ready() -> bool:
        states = {n.metadata.name: {c.type: c.status for c in (n.status.conditions or [])} for n in client.list(Node)}
        return all(states.get(name, {}).get("Ready") == "True" for name in names)

    wait_until(ready, timeout=timeout, what=f"KWOK to report {len(names)} simulated node(s) Ready")


@pytest.fixture(scope="module")
def plane(e2e_tools: E2eTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with engine_plane(e2e_tools, tmp_path_factory.mktemp("engine-plane")) as started:
        yield started


@pytest.fixture(scope="module")
def cluster(plane: ControlPlane) -> Client:
    """The plane's admin client, with the fleet's simulated nodes registered and Ready."""
    client = plane.client()
    register_nodes(client, [node_object(node) for node in fleet_nodes(load_config(FLEET_CONFIG))])
    return client


@pytest.fixture(scope="module")
def engine(e2e_tools: Any, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    return Engine(e2e_tools, tmp_path_factory.mktemp("engine"))


def live_kinds(client: Client) -> KindTable:
    """Plural and scope of every kind the API server serves now: the built-ins and its CRDs."""
    table = KindTable()
    table.learn(crd.to_dict() for crd in client.list(CustomResourceDefinition))
    return table


def exists(client: Client, key: ObjectKey, kinds: KindTable | None = None) -> bool:
    """Whether the object is in the API server (a kind no longer served holds no object)."""
    api_version, kind, namespace, name = key
    try:
        resource = (kinds or live_kinds(client)).resource({"apiVersion": api_version, "kind": kind})
    except KeyError:
        return False
    try:
        client.get(resource, name=name, namespace=namespace or None)
    except ApiError as error:
        if error.status.code == 404:
            return False
        raise
    return True


def install_prometheus_operator_crds(client: Client) -> None:
    """The Prometheus Operator's CRDs (from the shared reference data), applied and Established, as
    kube-prometheus-stack would have installed them before a stack with `cluster.prometheusOperator`."""
    crds = [doc for path in sorted((REFERENCE_DATA / "crds").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text())
            if doc and doc.get("kind") == "CustomResourceDefinition" and doc["spec"]["group"] == "monitoring.coreos.com"]
    assert crds, "the Prometheus Operator CRDs are not in the shared reference data"
    failures = server_side_apply(client, crds, KindTable(), dry_run=False)
    assert not failures, failures
    wait_established(client, [crd["metadata"]["name"] for crd in crds])
