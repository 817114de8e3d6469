"""`operator.driver.rollout`: the stages a driver change goes through, checked before anything renders.

The shape (stage names, one stage per pool, alerts with a Prometheus) is checked by the model, what it refers to
(pools, a controller that runs, upgrades that are on) with the whole document; the render puts the stage plan
into the controller's settings (so `pulumi preview` shows a change of it) and says it in its notes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_operator.agents.controller.settings import parse_settings
from gpu_operator.config import ConfigError, load_config, parse_config
from gpu_operator.render import render
from gpu_operator.render.notes import render_notes
from gpu_operator.upgrade.stages import RolloutPolicy, RolloutStage
from tests.config.test_errors import T4, problems_of, with_pools

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "configs" / "per-pool-drivers.yaml"
_IMAGE = {"agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}}}


def _staged(*pools: str) -> dict[str, Any]:
    return {"operator": {"driver": {"rollout": {"stages": [{"name": "canary", "pools": list(pools)}]}}}}


# (check, failing document, path of its problem, a passing document): tests/config/test_errors.py runs them
ROLLOUT_CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("_something_rolls_it", _staged("*"), "operator.driver.rollout", {**_IMAGE, **_staged("*")}),
    ("_stage_pools_exist", with_pools(T4, **_IMAGE, **_staged("a100")), "operator.driver.rollout.stages[0].pools[0]",
     with_pools(T4, **_IMAGE, **_staged(T4["name"]))),
]


def _document(**rollout: Any) -> dict[str, Any]:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["operator"]["driver"]["rollout"] = rollout
    return document


def _problems(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as error:
        parse_config(document)
    return [str(problem) for problem in error.value.problems]


CANARY = {"name": "canary", "pools": ["t4"], "soakSeconds": 600}


@pytest.mark.parametrize(("rollout", "expected"), [
    ({"stages": []}, "operator.driver.rollout.stages: "),
    ({"stages": [{"name": "Canary!", "pools": ["t4"]}]}, "operator.driver.rollout.stages[0].name: "),
    ({"stages": [{"name": "canary", "pools": []}]}, "operator.driver.rollout.stages[0].pools: "),
    ({"stages": [{"name": "canary", "pools": ["t4", " "]}]}, "a pool name is empty"),
    ({"stages": [CANARY, {**CANARY, "pools": ["h100"]}]}, "stage name 'canary' is used twice"),
    ({"stages": [CANARY, {"name": "rest", "pools": ["t4", "*"]}]}, "pool 't4' is in more than one stage"),
    ({"stages": [CANARY], "alerts": ["GPUXidCritical"]}, "alerts need prometheusUrl"),
    ({"stages": [CANARY], "prometheusUrl": "prometheus:9090"}, "operator.driver.rollout.prometheusUrl: "),
    ({"stages": [{**CANARY, "soakSeconds": -1}]}, "operator.driver.rollout.stages[0].soakSeconds: "),
    ({"stages": [{**CANARY, "soak": 60}]}, "operator.driver.rollout.stages[0].soak: "),
])
def test_a_bad_shape_is_named(rollout: dict[str, Any], expected: str) -> None:
    problems = _problems(_document(**rollout))
    assert any(expected in problem for problem in problems), problems


def test_stages_name_the_documents_pools() -> None:
    problems = _problems(_document(stages=[{"name": "canary", "pools": ["t4s"]}, {"name": "rest", "pools": ["*"]}]))
    assert problems == ["operator.driver.rollout.stages[0].pools[0]: no pool named 't4s' in pools (h100, t4, a100): "
                        "did you mean 't4'?"]


def test_without_the_controller_a_rollout_is_refused_with_both_ways_out() -> None:
    document = _document(stages=[CANARY])
    del document["agents"]
    [problem] = [p for p in _problems(document) if p.startswith("operator.driver.rollout")]
    assert "agents.image" in problem and "agents.build" in problem and "remove rollout" in problem


def test_with_upgrades_off_a_rollout_is_refused() -> None:
    document = _document(stages=[CANARY])
    document["operator"]["driver"]["upgradePolicy"] = {"autoUpgrade": False}
    assert _problems(document) == ["operator.driver.rollout: operator.driver.upgradePolicy.autoUpgrade is false, so "
                                   "the controller upgrades no node and the first stage would wait for good: set "
                                   "autoUpgrade to true, or remove rollout"]


def test_the_stage_plan_is_in_the_controllers_settings_and_the_notes() -> None:
    config = load_config(EXAMPLE)
    [settings_map] = [o for o in render(config) if o["kind"] == "ConfigMap"
                      and o["metadata"]["name"] == "gpu-operator-controller"]
    text = next(iter(settings_map["data"].values()))
    assert json.loads(text)["rollout"] == {
        "stages": [{"name": "canary", "pools": ["t4"], "soakSeconds": 3600},
                   {"name": "rest", "pools": ["*"], "soakSeconds": 0}], "alerts": [], "prometheusUrl": ""}
    settings = parse_settings(text, "gpu-operator")
    assert settings.rollout == RolloutPolicy((RolloutStage("canary", ("t4",), 3600), RolloutStage("rest", ("*",))))
    [note] = [n for n in render_notes(config) if "rolls out in stages" in n]
    assert note.endswith("1. canary: t4, then soaks 3600 s; 2. rest: every other pool")


def test_a_changed_stage_plan_changes_the_controllers_template() -> None:
    """So `pulumi up` restarts the controller with the new plan (the settings checksum on its pod template)."""
    def checksum(document: dict[str, Any]) -> str:
        [deployment] = [o for o in render(parse_config(document)) if o["kind"] == "Deployment"
                        and o["metadata"]["name"] == "gpu-operator"]
        return json.dumps(deployment["spec"]["template"]["metadata"]["annotations"], sort_keys=True)

    base = yaml.safe_load(EXAMPLE.read_text())
    longer = copy.deepcopy(base)
    longer["operator"]["driver"]["rollout"]["stages"][0]["soakSeconds"] = 7200
    assert checksum(base) != checksum(longer)


def test_the_events_and_status_reads_are_granted_only_with_a_rollout() -> None:
    def role_rules(document: dict[str, Any]) -> list[dict[str, Any]]:
        [role] = [o for o in render(parse_config(document)) if o["kind"] == "Role"
                  and o["metadata"]["name"] == "gpu-operator" and o["metadata"]["namespace"] == "gpu-operator"]
        return role["rules"]

    staged = role_rules(yaml.safe_load(EXAMPLE.read_text()))
    plain_document = yaml.safe_load(EXAMPLE.read_text())
    del plain_document["operator"]["driver"]["rollout"]
    plain = role_rules(plain_document)
    assert {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]} in staged
    assert not any("events" in rule["resources"] for rule in plain)
    status = lambda rules: next(r["verbs"] for r in rules if r.get("resourceNames") == ["gpu-operator-status"])  # noqa: E731
    assert (status(staged), status(plain)) == (["get", "update"], ["update"])


@pytest.mark.parametrize("check, failing, path, passing", ROLLOUT_CASES, ids=[f"{c[0]}-{c[2]}" for c in ROLLOUT_CASES])
def test_cross_section_rule(check: str, failing: dict[str, Any], path: str, passing: dict[str, Any]) -> None:
    assert [p.path for p in problems_of(failing)] == [path]
    parse_config(passing)
