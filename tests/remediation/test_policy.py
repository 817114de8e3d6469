"""The typed rules and their JSON form: ladders, per-pool rules, breakers, and every problem named with its path."""

from __future__ import annotations

import pytest

from gpu_operator.agents.cloud.aks_auto_repair import REPAIR_WINDOW_SECONDS
from gpu_operator.agents.cloud.result import CloudOutcome
from gpu_operator.faults import ACTIONS, FAULT_CLASSES, QUARANTINE_ACTIONS
from gpu_operator.remediation import (
    Attempts,
    Breaker,
    CloudSpec,
    DrainMode,
    DrainSpec,
    Mode,
    PolicyError,
    PoolPolicy,
    RemediationPolicy,
    Rule,
    TaintSpec,
    policy_from_document,
)
from gpu_operator.remediation.policy import ladder_problem
from gpu_operator.remediation.steps import _RETRY_OUTCOMES
from gpu_operator.remediation.vocabulary import REPAIR_ACTIONS, UPGRADE_HOLDS, WHOLE_NODE_ACTIONS
from gpu_operator.upgrade import HOLDS_SLOT


def test_the_vocabulary_agrees_with_the_catalog_the_upgrade_and_the_cloud() -> None:
    assert QUARANTINE_ACTIONS | REPAIR_ACTIONS <= set(ACTIONS) and WHOLE_NODE_ACTIONS <= REPAIR_ACTIONS
    assert UPGRADE_HOLDS == {state.value for state in HOLDS_SLOT}
    assert RemediationPolicy().timeouts.aks_repair_seconds == REPAIR_WINDOW_SECONDS
    assert _RETRY_OUTCOMES <= {outcome.value for outcome in CloudOutcome}


@pytest.mark.parametrize(("ladder", "problem"), [
    ((), "lists no action"),
    (("cordon", "explode"), "unknown action 'explode': use observe, cordon"),
    (("observe", "cordon"), "observe stands alone"),
    (("cordon", "cordon"), "twice"),
    (("cordon", "reboot", "reset-gpu"), "must follow the order cordon, taint, drain"),
    (("drain", "reboot"), "must start with cordon or taint"),
    (("reboot",), "must start with cordon or taint"),
])
def test_a_ladder_that_cannot_climb_is_refused(ladder: tuple[str, ...], problem: str) -> None:
    assert problem in (ladder_problem(ladder) or "")


@pytest.mark.parametrize("ladder", [("observe",), ("cordon",), ("taint", "needs-human"),
                                    ("cordon", "taint", "drain", "reset-gpu", "reboot", "needs-human")])
def test_ladders_that_climb(ladder: tuple[str, ...]) -> None:
    assert ladder_problem(ladder) is None


def test_every_catalog_default_is_a_ladder() -> None:
    assert all(ladder_problem(c.ladder) is None for c in FAULT_CLASSES.values())


def test_a_policy_names_every_problem_at_once() -> None:
    with pytest.raises(PolicyError) as raised:
        RemediationPolicy(
            rules={"bogus": Rule(("cordon",)), "application": Rule(("cordon",)),
                   "fallen-off-bus": Rule(("cordon", "reimage"), drain=DrainSpec(DrainMode.DELETE, 60, 60))},
            pools={"a": PoolPolicy(rules={"thermal": Rule(("observe", "cordon"))})}, max_concurrent=0)
    paths = [path for path, _ in raised.value.problems]
    assert paths == ["rules.bogus", "rules.application.actions", "rules.fallen-off-bus.actions",
                     "pools.a.rules.thermal.actions", "maxConcurrent", "rules.fallen-off-bus.drain"]
    text = str(raised.value)
    assert "unknown fault class 'bogus': use application, informational" in text
    assert "application faults set no Node condition" in text and "set remediation.cloud.provider: azure" in text
    assert "deleteAfterSeconds 60 must be under timeoutSeconds 60" in text


def test_rules_come_from_the_pool_then_the_section_then_the_catalog() -> None:
    policy = RemediationPolicy(
        rules={"reset-required": Rule(("cordon", "needs-human"), taint=TaintSpec("x", "NoExecute"))},
        pools={"a100": PoolPolicy(mode=Mode.ENFORCE, rules={"reset-required": Rule(("taint",), dry_run=True)})})
    assert policy.rule_for("h100", "reset-required").actions == ("cordon", "needs-human")
    assert policy.rule_for("h100", "reset-required").taint == TaintSpec("x", "NoExecute")
    pool_rule = policy.rule_for("a100", "reset-required")
    assert pool_rule.actions == ("taint",) and pool_rule.dry_run and pool_rule.taint == TaintSpec()
    assert policy.rule_for("h100", "fallen-off-bus").actions == FAULT_CLASSES["fallen-off-bus"].ladder
    assert policy.mode_for("a100") is Mode.ENFORCE and policy.mode_for("h100") is Mode.OBSERVE


@pytest.mark.parametrize(("breaker", "total", "limit"), [
    (Breaker(), 10, None), (Breaker(max_nodes=3), 100, 3), (Breaker(max_percent=10), 5, 1),
    (Breaker(max_percent=10), 25, 3), (Breaker(max_nodes=2, max_percent=50), 10, 2),
    (Breaker(max_nodes=20, max_percent=10), 100, 10), (Breaker(max_percent=10), 0, 0)])
def test_a_breaker_limit_is_the_smaller_of_its_two(breaker: Breaker, total: int, limit: int | None) -> None:
    assert breaker.limit(total) == limit


def test_unguarded_restarts_name_where_and_what_is_missing() -> None:
    assert RemediationPolicy().unguarded_restarts() == []  # observe mode restarts nothing
    guarded = RemediationPolicy(mode=Mode.ENFORCE)
    assert guarded.unguarded_restarts() == []
    bare = RemediationPolicy(mode=Mode.ENFORCE, breaker=Breaker(), attempts=Attempts(max=None),
                             min_reboot_interval_seconds=0)
    [finding] = bare.unguarded_restarts()
    assert finding == ("the cluster reboots or reimages (fallen-off-bus, nvlink, reboot-required, reset-required) "
                       "without a breaker or a rate cap")
    pools = RemediationPolicy(breaker=Breaker(), pools={
        "a": PoolPolicy(mode=Mode.ENFORCE, breaker=Breaker(max_nodes=1)),
        "b": PoolPolicy(mode=Mode.ENFORCE, rules={"fallen-off-bus": Rule(("cordon", "reboot"), dry_run=True)})})
    assert pools.unguarded_restarts() == [
        "pool b reboots or reimages (nvlink, reboot-required, reset-required) without a breaker"]


def test_the_json_section_reads_into_the_policy() -> None:
    document = {
        "mode": "enforce", "rules": {"reset-required": {"actions": ["cordon", "reboot"], "dryRun": True,
                                                        "drain": {"mode": "delete", "deleteAfterSeconds": 5}}},
        "xids": {"ignore": [13], "classify": {"109": "reset-required"}},
        "drain": {"mode": "wait-for-completion", "timeoutSeconds": 60, "partial": False},
        "taint": {"key": "example.com/gpu", "effect": "NoExecute"}, "attempts": {"max": None, "windowSeconds": 60},
        "minRebootIntervalSeconds": 0, "maxConcurrent": 2, "breaker": {"maxNodes": None, "maxPercent": 20},
        "pools": {"h100": {"mode": "dry-run", "breaker": {"maxNodes": 1}, "rules": {}}},
        "cloud": {"provider": "azure", "reimage": False, "aksAutoRepair": True},
        "timeouts": {"rebootSeconds": 60}, "someFutureKey": 1,
    }
    policy = policy_from_document(document)
    assert policy.mode is Mode.ENFORCE and policy.rules["reset-required"].dry_run
    assert policy.rules["reset-required"].drain == DrainSpec(DrainMode.DELETE, 600, 5, True)
    assert policy.xids.ignore == {13} and policy.xids.classify == {109: "reset-required"}
    assert policy.drain == DrainSpec(DrainMode.WAIT_FOR_COMPLETION, 60, 0, False)
    assert policy.taint == TaintSpec("example.com/gpu", "NoExecute") and policy.attempts == Attempts(None, 60)
    assert policy.breaker == Breaker(None, 20) and policy.pools["h100"].breaker == Breaker(1, None)
    assert policy.pools["h100"].mode is Mode.DRY_RUN and policy.cloud == CloudSpec("azure", False, True)
    assert policy.timeouts.reboot_seconds == 60 and policy.timeouts.reset_gpu_seconds == 600
    assert policy_from_document({}) == RemediationPolicy()
    assert policy_from_document({"breaker": None}).breaker == Breaker()


def test_a_bad_json_section_names_every_key() -> None:
    with pytest.raises(PolicyError) as raised:
        policy_from_document({"mode": "fix-it", "maxConcurrent": "5", "rules": {"thermal": {"actions": "cordon"}},
                              "breaker": {"maxNodes": -1}, "cloud": {"reimage": "yes"}, "xids": {"classify": {
                                  "x": "y"}}, "pools": {"a": 3}, "drain": {"mode": "now"}})
    assert [path for path, _ in raised.value.problems] == [
        "mode", "rules.thermal.actions", "xids.classify.x", "drain.mode", "maxConcurrent", "breaker.maxNodes",
        "pools.a", "cloud.reimage"]
    assert "mode: must be one of observe, enforce, dry-run, not 'fix-it'" in str(raised.value)


def test_the_node_agent_is_asked_for_resets_and_reboots_only_where_rules_enforce_them() -> None:
    assert RemediationPolicy().node_agent_actions() == frozenset()  # observe
    assert RemediationPolicy(mode=Mode.ENFORCE).node_agent_actions() == {"reset-gpu", "reboot"}
    assert RemediationPolicy(mode=Mode.ENFORCE, cloud=CloudSpec("azure")).node_agent_actions() == {"reset-gpu"}
    only_reboots = {name: Rule(("cordon", "reboot")) for name in ("reset-required", "nvlink")}
    assert RemediationPolicy(mode=Mode.ENFORCE, rules=only_reboots).node_agent_actions() == {"reboot"}
    dry = {name: Rule(dry_run=True) for name in ("reset-required", "nvlink", "fallen-off-bus", "reboot-required")}
    assert RemediationPolicy(mode=Mode.ENFORCE, rules=dry).node_agent_actions() == frozenset()
    pooled = RemediationPolicy(pools={"h100": PoolPolicy(mode=Mode.ENFORCE)})
    assert pooled.node_agent_actions() == {"reset-gpu", "reboot"}
    assert RemediationPolicy(mode=Mode.DRY_RUN).node_agent_actions(["a100"]) == frozenset()
