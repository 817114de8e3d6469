"""Fixtures of the e2e tier: one control plane per session, the upstream CRDs, and the simulated fleet.

The tier runs only when selected (`make e2e`, i.e. `pytest tests/e2e -m e2e`); a plain `pytest tests` deselects
it, so the unit suite never needs the tools. Selected without the tools built, every test errors with the fix
(`make e2e-tools`). The control plane is stopped at the end of the session whatever happened; its logs stay in
the session's temporary directory and the tail of each is printed when a test failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Node

from gpu_operator.config import GpuStackConfig, load_config
from tests.e2e.apply import KindTable, server_side_apply, wait_established
from tests.e2e.control_plane import ControlPlane, running_control_plane
from tests.e2e.nodes import FLEET_CONFIG, SimulatedNode, fleet_nodes, node_object
from tests.e2e.report import NOTES, note
from tests.e2e.tools import E2eTools, locate_tools
from tests.e2e.waiting import wait_until
from tests.support.reference import REFERENCE_DATA

E2E_DIR = Path(__file__).resolve().parent
UPSTREAM_CRDS = REFERENCE_DATA / "crds"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "e2e" in (config.option.markexpr or ""):
        return
    ours = [item for item in items if E2E_DIR in Path(str(item.fspath)).parents]
    if ours:
        config.hook.pytest_deselected(items=ours)
        items[:] = [item for item in items if item not in ours]


@pytest.fixture(scope="session")
def e2e_tools() -> E2eTools:
    try:
        return locate_tools()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def control_plane(e2e_tools: E2eTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_control_plane(e2e_tools, tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane) -> Client:
    return control_plane.client()


def upstream_crds() -> list[dict[str, Any]]:
    """Every CustomResourceDefinition of the shared reference data (NFD, Prometheus Operator, NVIDIA, ...)."""
    if not UPSTREAM_CRDS.is_dir():
        pytest.fail(f"the upstream CRDs are not available at {UPSTREAM_CRDS}", pytrace=False)
    crds = []
    for path in sorted(UPSTREAM_CRDS.glob("*.yaml")):
        crds.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") == "CustomResourceDefinition")
    return crds


@pytest.fixture(scope="session")
def kinds(admin: Client) -> KindTable:
    """The upstream CRDs applied (for real) and Established; the table knows their kinds."""
    crds = upstream_crds()
    table = KindTable()
    table.learn(crds)
    failures = server_side_apply(admin, crds, table, dry_run=False)
    assert not failures, "the API server refused upstream CRDs:\n" + "\n".join(map(str, failures))
    wait_established(admin, [crd["metadata"]["name"] for crd in crds])
    note(f"applied {len(crds)} upstream CRDs from the shared reference data on the shared plane; the charts "
          "themselves are installed from ../shared/reference/charts by the real-engine modules (test_engine_*)")
    return table


@pytest.fixture(scope="session")
def fleet_config() -> GpuStackConfig:
    return load_config(FLEET_CONFIG)


@pytest.fixture(scope="session")
def fleet(admin: Client, fleet_config: GpuStackConfig) -> list[SimulatedNode]:
    """The simulated nodes registered and Ready (KWOK sets the Ready condition)."""
    nodes = fleet_nodes(fleet_config)
    table = KindTable()
    failures = server_side_apply(admin, [node_object(node) for node in nodes], table, dry_run=False)
    assert not failures, "\n".join(map(str, failures))

    def all_ready() -> bool:
        ready = set()
        for node in admin.list(Node):
            conditions = {c.type: c.status for c in (node.status.conditions or [])} if node.status else {}
            if conditions.get("Ready") == "True":
                ready.add(node.metadata.name)
        return {node.name for node in nodes} <= ready

    wait_until(all_ready, timeout=60, what="KWOK to report every simulated node Ready")
    return nodes


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        plane = item.funcargs.get("control_plane") if hasattr(item, "funcargs") else None
        if isinstance(plane, ControlPlane):
            tails = [f"--- {p.name} ({p.log}) ---\n{p.tail(6)}" for p in plane.processes]
            report.sections.append(("control plane logs", "\n".join(tails)))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if NOTES:
        terminalreporter.section("e2e report")
        for line in NOTES:
            terminalreporter.write_line(line)
