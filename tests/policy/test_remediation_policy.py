"""The remediation-restarts-are-bounded policy: judged on the controller's settings, as check and the pack see them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_operator.config import parse_config
from gpu_operator.policy import POLICIES, Enforcement, PolicyContext, check
from gpu_operator.render import render

IMAGE = {"agents": {"image": {"repository": "example.azurecr.io/gpu-operator-agents", "tag": "1.0.0"}}}
PROD = PolicyContext(production=True)
[POLICY] = [p for p in POLICIES if p.name == "remediation-restarts-are-bounded"]
UNBOUNDED = {"mode": "enforce", "breaker": {"maxNodes": None, "maxPercent": None}, "attempts": {"max": None},
             "minRebootIntervalSeconds": 0}


def _objects(remediation: dict[str, Any]) -> list[dict[str, Any]]:
    return render(parse_config({**IMAGE, "remediation": remediation}))


def test_unbounded_restarts_in_production_are_advised_against() -> None:
    [violation] = POLICY.evaluate(_objects(UNBOUNDED), PROD)
    assert violation.resource == "ConfigMap gpu-operator/gpu-operator-controller"
    assert violation.message.startswith(
        "remediation in the cluster reboots or reimages (fallen-off-bus, nvlink, reboot-required, reset-required) "
        "without a breaker or a rate cap")
    assert POLICY.enforcement is Enforcement.ADVISORY
    assert POLICY.name in [f.policy.name for f in check(_objects(UNBOUNDED), PROD)]


@pytest.mark.parametrize("remediation", [
    {},                                                   # the default: observe
    {**UNBOUNDED, "mode": "dry-run"},
    {"mode": "enforce"},                                  # the default breaker and caps
    {**UNBOUNDED, "breaker": {"maxPercent": 5}, "minRebootIntervalSeconds": 600},
    {**UNBOUNDED, "rules": {name: {"actions": ["cordon", "drain", "needs-human"]} for name in (
        "fallen-off-bus", "nvlink", "reboot-required", "reset-required")}},
])
def test_bounded_or_non_restarting_rules_pass(remediation: dict[str, Any]) -> None:
    assert POLICY.evaluate(_objects(remediation), PROD) == []


def test_a_pool_that_enforces_without_bounds_is_named() -> None:
    document = {**UNBOUNDED, "mode": "observe", "attempts": {"max": 2},
                "pools": {"h100": {"mode": "enforce", "breaker": {"maxNodes": 1}}, "a100": {"mode": "enforce"}}}
    [violation] = POLICY.evaluate(_objects(document), PROD)
    assert violation.message.startswith("remediation in pool a100 reboots or reimages (fallen-off-bus, nvlink, "
                                        "reboot-required, reset-required) without a breaker:")


def test_only_production_is_judged_and_unreadable_settings_are_said() -> None:
    assert POLICY.evaluate(_objects(UNBOUNDED), PolicyContext()) == []
    config_map = {"kind": "ConfigMap", "metadata": {"name": "gpu-operator-controller", "namespace": "gpu-operator"},
                  "data": {"controller.json": json.dumps({"remediation": {"mode": "sometimes"}})}}
    [violation] = POLICY.evaluate([config_map], PROD)
    assert "its remediation settings cannot be read (mode: must be one of observe" in violation.message
    config_map["data"] = {"controller.json": "[]"}
    assert "not a JSON object" in POLICY.evaluate([config_map], PROD)[0].message
