"""The Grafana dashboard: SDK round trip, unique panel ids, datasource variable, metrics the exporters emit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard

from gpu_operator.agents.controller.rollout_metrics import ROLLOUT_METRIC_NAMES
from gpu_operator.agents.metrics_exporter.fields import FIELD_SOURCES
from gpu_operator.config import parse_config
from gpu_operator.config.dcgm_metrics import parse_metrics_csv
from gpu_operator.render.monitoring import dashboard_json, monitoring_objects, render_dashboard_configmap
from gpu_operator.render.monitoring.exporter_fields import NODE_STATUS_METRICS, ROLLOUT_METRICS
from gpu_operator.render.monitoring.promql import metric_names
from tests.support.agents import with_agents
from tests.support.reference import reference_file
from tests.support.schemas import validate_objects

FULL = {"operator": {"nodeStatusExporter": {"enabled": True}}}
ROLLOUT = {"stages": [{"name": "canary", "pools": ["gpu-canary"], "soakSeconds": 3600},
                      {"name": "rest", "pools": ["*"]}]}
#: A staged driver rollout, run by the operator controller (which needs the agents image).
STAGED = with_agents({"operator": {"nodeStatusExporter": {"enabled": True}, "driver": {"rollout": ROLLOUT}}})


def _dashboard(document: dict[str, Any] | None = None) -> dict[str, Any]:
    return json.loads(dashboard_json(parse_config(FULL if document is None else document)))


def _panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in board["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return found


def _queries(board: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in _panels(board) for target in panel.get("targets", [])]


def test_the_json_round_trips_through_the_sdks_model() -> None:
    text = dashboard_json(parse_config(FULL))
    model = Dashboard.from_json(json.loads(text))
    assert json.dumps(model, cls=JSONEncoder, sort_keys=True, indent=2) + "\n" == text


@pytest.mark.parametrize("staged", [False, True])
def test_panel_ids_are_unique_and_panels_do_not_overlap(staged: bool) -> None:
    panels = _panels(_dashboard(STAGED if staged else None))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)) and len(ids) > 20
    cells = set()
    for panel in panels:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))
        assert grid["x"] + grid["w"] <= 24


def test_every_query_reads_the_datasource_variable() -> None:
    board = _dashboard()
    [variable] = [v for v in board["templating"]["list"] if v["type"] == "datasource"]
    assert variable["name"] == "datasource" and variable["query"] == "prometheus"
    for panel in _panels(board):
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    [node] = [v for v in board["templating"]["list"] if v["name"] == "node"]
    assert node["datasource"]["uid"] == "${datasource}"


def _nvidia_default_fields() -> set[str]:
    text = reference_file("dcgm-exporter/default-counters.csv").read_text(encoding="utf-8")
    return {field.field for field in parse_metrics_csv(text) if field.kind != "label"}


@pytest.mark.parametrize("implementation", ["agents", "nvidia"])
def test_every_metric_a_panel_names_is_one_the_exporter_emits(implementation: str) -> None:
    fields = _nvidia_default_fields()
    if implementation == "agents":
        fields &= set(FIELD_SOURCES)
    available = fields | NODE_STATUS_METRICS | {"up", "ALERTS"}
    choice = {} if implementation == "agents" else {"agents": {"implementation": implementation}}
    board = _dashboard({**FULL, **choice})
    queries = _queries(board)
    assert len(queries) > 20
    for query in queries:
        names = metric_names(query)
        assert names and names <= available, (query, names - available)


def test_a_panel_on_a_field_the_csv_does_not_collect_is_left_out() -> None:
    csv = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_DEV_GPU_UTIL, gauge, utilisation\n"
    board = _dashboard({"configs": {"dcgmExporter": csv}, "operator": {"dcgmExporter": {"config": {"name": "m"}}}})
    titles = {panel["title"] for panel in _panels(board)}
    assert {"GPU temperature", "Utilisation by GPU"} <= titles
    assert "Power draw" not in titles and "Power" not in titles  # neither the panel nor its empty row
    assert "Operand readiness" not in titles


def test_the_configmap_is_labelled_for_the_grafana_sidecar() -> None:
    config = parse_config(FULL)
    configmap = render_dashboard_configmap(config)
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "gpu-operator"
    [text] = configmap["data"].values()
    assert text == dashboard_json(config)
    assert validate_objects([configmap]) == []


@pytest.mark.parametrize(
    ("document", "kinds"),
    [
        ({}, []),
        ({"cluster": {"prometheusOperator": True}}, ["PrometheusRule", "ConfigMap"]),
        ({"monitoring": {"dashboard": True}}, ["ConfigMap"]),
        ({"cluster": {"prometheusOperator": True}, "monitoring": {"dashboard": False}}, ["PrometheusRule"]),
        ({"cluster": {"prometheusOperator": True}, "monitoring": {"enabled": False}}, []),
    ],
)
def test_which_monitoring_objects_a_config_gets(document: dict[str, Any], kinds: list[str]) -> None:
    assert [obj["kind"] for obj in monitoring_objects(parse_config(document))] == kinds


def test_our_node_status_exporter_adds_the_state_and_rdma_panels() -> None:
    ours = {panel["title"] for panel in _panels(_dashboard(with_agents(FULL)))}
    nvidias = {panel["title"] for panel in _panels(_dashboard())}
    added = {"MIG reconfiguration state", "Driver upgrade state", "RDMA devices advertised on InfiniBand nodes"}
    assert added <= ours and not added & nvidias
    assert "RDMA" in ours  # its row
    board = _dashboard(with_agents(FULL))
    ids = [panel["id"] for panel in _panels(board)]
    assert len(ids) == len(set(ids))
    Dashboard.from_json(json.loads(json.dumps(board)))


def _row(board: dict[str, Any], title: str) -> list[dict[str, Any]]:
    """The panels under the row called `title` (rows are flat in the JSON: a row's panels follow it)."""
    found: list[dict[str, Any]] = []
    inside = False
    for panel in board["panels"]:
        if panel["type"] == "row":
            inside = panel["title"] == title
        elif inside:
            found.append(panel)
    return found


def test_a_staged_rollout_gets_its_per_stage_row_from_the_controllers_metrics() -> None:
    board = _dashboard(STAGED)
    panels = {panel["title"]: panel for panel in _row(board, "Driver rollout")}
    assert list(panels) == ["Rollout", "Soak time left by stage", "Phase by stage", "Nodes by state per stage"]
    queries = {title: [t["expr"] for t in panel["targets"]] for title, panel in panels.items()}
    read = frozenset().union(*(metric_names(q) for qs in queries.values() for q in qs))
    assert read == ROLLOUT_METRICS == ROLLOUT_METRIC_NAMES  # the render's copy of the names is the controller's
    legends = {title: [t["legendFormat"] for t in panel["targets"]] for title, panel in panels.items()}
    assert legends["Nodes by state per stage"] == ["{{stage}} {{state}}"]
    assert legends["Phase by stage"] == ["{{stage}} {{phase}}"]
    assert legends["Soak time left by stage"] == ["{{stage}}"]
    assert panels["Phase by stage"]["type"] == "state-timeline"
    assert panels["Soak time left by stage"]["fieldConfig"]["defaults"]["unit"] == "s"
    [words] = panels["Rollout"]["fieldConfig"]["defaults"]["mappings"]
    assert {value: result["text"] for value, result in words["options"].items()} == {"0": "running", "1": "halted"}
    Dashboard.from_json(json.loads(json.dumps(board)))


def test_a_controller_without_a_staged_rollout_gets_no_rollout_row() -> None:
    board = _dashboard(with_agents(FULL))
    assert "Remediation" in {panel["title"] for panel in _panels(board)}  # the controller's other rows are there
    assert "Driver rollout" not in {panel["title"] for panel in _panels(board)}
    assert not any(metric_names(query) & ROLLOUT_METRICS for query in _queries(board))
