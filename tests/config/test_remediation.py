"""The `remediation` section: on by default in observe mode, typed, every problem named with its path at once."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_operator.config import ConfigError, parse_config
from gpu_operator.config.remediation import RemediationSpec
from gpu_operator.faults import FAULT_CLASSES, classify_xid
from gpu_operator.remediation import Breaker, DrainMode, Mode, RemediationPolicy, policy_from_document

POOLS = {"aks": {"resourceGroup": "rg", "clusterName": "aks", "kubernetesVersion": "1.34"},
         "pools": [{"name": "h100", "vmSize": "Standard_ND96isr_H100_v5"}]}


#: The cross-section rules of the section (gpu_operator/config/remediation_checks.py): (rule, a document it
#: refuses, the path named, a document it lets through).
REMEDIATION_CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("_pools_exist", {**POOLS, "remediation": {"pools": {"a100": {}}}}, "remediation.pools.a100",
     {**POOLS, "remediation": {"pools": {"h100": {}}}}),
    ("_rules_can_act", {"remediation": {"pools": {"p": {"rules": {"application": {"actions": ["cordon"]}}}}}},
     "remediation.pools.p.rules.application.actions",
     {"remediation": {"pools": {"p": {"rules": {"application": {"actions": ["observe"]}}}}}}),
    ("_rules_can_act", {"remediation": {"rules": {"nvlink": {"actions": ["cordon", "reimage"]}}}},
     "remediation.rules.nvlink.actions",
     {"remediation": {"rules": {"nvlink": {"actions": ["cordon", "reimage"]}}, "cloud": {"provider": "azure"}}}),
]


@pytest.mark.parametrize("check, failing, path, passing", REMEDIATION_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in REMEDIATION_CASES])
def test_remediation_rule(check: str, failing: dict[str, Any], path: str, passing: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(failing)
    assert [p.path for p in raised.value.problems] == [path]
    parse_config(passing)


def _problems(section: dict[str, Any], base: dict[str, Any] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config({**(base or {}), "remediation": section})
    return [str(problem) for problem in raised.value.problems]


def test_by_default_it_observes_with_the_planners_defaults() -> None:
    config = parse_config({})
    assert config.remediation.mode == "observe"
    assert config.remediation.policy() == RemediationPolicy()


def test_the_design_pages_example_is_accepted() -> None:
    config = parse_config({**POOLS, "remediation": {
        "mode": "enforce",
        "rules": {"reset-required": {"actions": ["cordon", "drain", "reset-gpu", "reboot", "needs-human"],
                                     "dryRun": False},
                  "fallen-off-bus": {"actions": ["cordon", "drain", "reboot", "reimage", "needs-human"]},
                  "application": {"actions": ["observe"]}},
        "xids": {"ignore": [94], "classify": {"109": "reset-required"}},
        "drain": {"mode": "delete", "timeoutSeconds": 600, "deleteAfterSeconds": 300, "partial": True},
        "taint": {"key": "nvidia.com/gpu-fault", "effect": "NoSchedule"},
        "attempts": {"max": 3, "windowSeconds": 86400}, "minRebootIntervalSeconds": 1800, "maxConcurrent": 5,
        "breaker": {"maxNodes": 10, "maxPercent": 10},
        "pools": {"h100": {"breaker": {"maxNodes": 2}, "rules": {"nvlink": {"actions": ["cordon"]}},
                           "mode": "enforce"}},
        "cloud": {"provider": "azure", "reimage": True, "aksAutoRepair": False}}})
    policy = config.remediation.policy()
    assert policy.mode is Mode.ENFORCE and policy.drain.mode is DrainMode.DELETE
    assert policy.pools["h100"].breaker == Breaker(max_nodes=2)
    assert policy.rule_for("h100", "nvlink").actions == ("cordon",)
    assert policy.xids.classify == {109: "reset-required"} and policy.xids.ignore == {94}
    assert policy.xids.fault_class(94, classify_xid(94)) is None
    assert policy.xids.fault_class(109, classify_xid(45)) is FAULT_CLASSES["reset-required"]


def test_every_problem_is_named_with_its_path_at_once() -> None:
    problems = _problems({
        "mode": "enforced",
        "rules": {"fallen-of-bus": {"actions": ["cordon"]}, "thermal": {"actions": ["cordon", "explode"]},
                  "nvlink": {"actions": ["reboot", "cordon"]}},
        "xids": {"ignore": [0, 173], "classify": {"999": "reset-required", "48": "on-fire"}},
        "drain": {"mode": "gently"}, "breaker": {"maxPercent": 0}, "maxConcurrent": 0})
    assert problems == [
        "remediation.mode: Input should be 'observe', 'enforce' or 'dry-run' (got 'enforced'); did you mean "
        "'enforce'?",
        "remediation.rules.fallen-of-bus: unknown fault class 'fallen-of-bus': use " + ", ".join(FAULT_CLASSES),
        "remediation.rules.thermal.actions[1]: unknown action 'explode': use observe, cordon, taint, drain, "
        "reset-gpu, reboot, reimage, needs-human",
        "remediation.rules.nvlink.actions: must follow the order cordon, taint, drain, reset-gpu, reboot, reimage, "
        "needs-human (a ladder climbs one way)",
        "remediation.xids.ignore[0]: 0 is no XID: NVIDIA's catalog numbers them 1-172",
        "remediation.xids.ignore[1]: 173 is no XID: NVIDIA's catalog numbers them 1-172",
        "remediation.xids.classify.999: 999 is no XID: NVIDIA's catalog numbers them 1-172",
        "remediation.xids.classify.48: unknown fault class 'on-fire': use " + ", ".join(FAULT_CLASSES),
        "remediation.drain.mode: Input should be 'evict', 'delete' or 'wait-for-completion' (got 'gently')",
        "remediation.maxConcurrent: Input should be greater than or equal to 1 (got 0)",
        "remediation.breaker.maxPercent: Input should be greater than or equal to 1 (got 0)",
    ]


@pytest.mark.parametrize(("section", "problem"), [
    ({"xids": {"ignore": [48], "classify": {"48": "thermal"}}},
     "remediation.xids: XID 48 is both ignored and classified: choose one"),
    ({"drain": {"mode": "delete", "timeoutSeconds": 60, "deleteAfterSeconds": 60}},
     "remediation.drain: deleteAfterSeconds 60 must be under timeoutSeconds 60"),
    ({"drain": {"timeoutSeconds": 0}}, "remediation.drain.timeoutSeconds: Input should be greater than or equal to 1"),
    ({"taint": {"key": "-bad-"}}, "remediation.taint.key"),
    ({"rules": {"thermal": {"actions": []}}}, "remediation.rules.thermal.actions: lists no action"),
    ({"rules": {"thermal": {"actions": ["observe", "cordon"]}}}, "observe stands alone"),
    ({"rules": {"thermal": {"actions": ["drain"]}}}, "must start with cordon or taint"),
    ({"attempts": {"max": "3"}}, "remediation.attempts.max"),
    ({"pools": {"h100": {"rules": {"informational": {"actions": ["cordon"]}}}}},
     "remediation.pools.h100.rules.informational.actions: informational faults set no Node condition"),
    ({"rules": {"fallen-off-bus": {"actions": ["cordon", "reimage"]}}},
     "remediation.rules.fallen-off-bus.actions: reimage needs the cloud: set remediation.cloud.provider: azure"),
    ({"cloud": {"provider": "azure", "reimage": False}, "rules": {"fallen-off-bus": {"actions": ["cordon",
                                                                                             "reimage"]}}},
     "reimage needs the cloud"),
    ({"pools": {"a100": {"mode": "enforce"}}}, "remediation.pools.a100: no pool named 'a100' in pools (h100)"),
    ({"cloud": {"provider": "gcp"}}, "remediation.cloud.provider"),
])
def test_a_bad_section_is_refused_naming_the_key(section: dict[str, Any], problem: str) -> None:
    assert any(problem in found for found in _problems(section, POOLS)), _problems(section, POOLS)


def test_pool_overrides_are_not_checked_without_pools_in_the_document() -> None:
    config = parse_config({"remediation": {"pools": {"gpu": {"mode": "enforce"}}}})
    assert config.remediation.policy().mode_for("gpu") is Mode.ENFORCE


def test_the_settings_document_spells_out_every_default_and_reads_back() -> None:
    spec = RemediationSpec.model_validate({"breaker": {"maxNodes": None, "maxPercent": 5},
                                           "attempts": {"max": None}})
    document = spec.settings_document()
    assert document["breaker"] == {"maxNodes": None, "maxPercent": 5}
    assert document["cloud"] == {"provider": None, "reimage": True, "aksAutoRepair": False}
    assert set(document) == {"mode", "rules", "xids", "drain", "taint", "attempts", "minRebootIntervalSeconds",
                             "maxConcurrent", "breaker", "pools", "cloud", "timeouts"}
    policy = policy_from_document(document)
    assert policy.breaker == Breaker(None, 5) and policy.attempts.max is None
