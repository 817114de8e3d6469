"""The controller's staged-rollout series, scraped as Prometheus would: the registry's exposition text read back
with prometheus_client's own parser.

NVIDIA's operator names its metrics under the `gpu_operator` namespace and sets the upgrade census
(`gpu_operator_nodes_upgrades_{in_progress,done,failed,available,pending}`) as gauges once per reconcile
(gpu-operator v26.7.0 controllers/operator_metrics.go `InitOperatorMetrics`, controllers/upgrade_controller.go
`reconcileClusterPolicyDriverUpgrades`); the per-stage view keeps that namespace and that census, split by stage.
"""

from __future__ import annotations

import pytest
from prometheus_client import Gauge, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpu_operator.agents.controller.metrics import ControllerMetrics
from gpu_operator.agents.controller.rollout_metrics import ROLLOUT_METRIC_NAMES
from gpu_operator.upgrade.stages import (RolloutMemory, RolloutPolicy, RolloutStage, StageDecision, StagedNode,
                                         evaluate)

POLICY = RolloutPolicy((RolloutStage("canary", ("gpu-canary",), soak_seconds=600),
                        RolloutStage("rest", ("*",))))
T0 = 1_800_000_000.0


def _scrape(metrics: ControllerMetrics) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample of the rollout's families: family name -> sorted labels -> value."""
    text = generate_latest(metrics.registry).decode()
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("gpu_operator_driver_rollout_"):
            assert family.type == "gauge", family.name
            for sample in family.samples:
                assert sample.name == family.name
                found.setdefault(family.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _decide(nodes: list[StagedNode], memory: RolloutMemory = RolloutMemory(), now: float = T0) -> StageDecision:
    return evaluate(POLICY, nodes, memory, "target-2", (), now)


def _canary(state: str, current: bool = False) -> list[StagedNode]:
    return [StagedNode("c1", "gpu-canary", state, current),
            StagedNode("r1", "gpu-main", "upgrade-required", False),
            StagedNode("r2", "gpu-main", "", True)]


def _by_stage(samples: dict[tuple[tuple[str, str], ...], float], label: str) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for labels, value in samples.items():
        named = dict(labels)
        table.setdefault(named["stage"], {})[named[label]] = value
    return table


def test_each_stage_counts_its_nodes_by_state_and_shows_its_one_phase() -> None:
    metrics = ControllerMetrics()
    metrics.record_rollout(_decide(_canary("cordon-required")), T0)
    scraped = _scrape(metrics)
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_nodes"], "state") == {
        "canary": {"pending": 0, "in_progress": 1, "upgraded": 0, "failed": 0},
        "rest": {"pending": 1, "in_progress": 0, "upgraded": 1, "failed": 0},
    }
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_phase"], "phase") == {
        "canary": {"active": 1}, "rest": {"waiting": 1}}
    assert scraped["gpu_operator_driver_rollout_halted"] == {(): 0}
    assert "gpu_operator_driver_rollout_soak_remaining_seconds" not in scraped


def test_a_soaking_stage_says_the_time_left_and_its_earlier_phase_goes_away() -> None:
    metrics = ControllerMetrics()
    active = _decide(_canary("upgrade-required"))
    metrics.record_rollout(active, T0)
    soaking = _decide(_canary("upgrade-done", current=True), active.memory, T0 + 60)
    metrics.record_rollout(soaking, T0 + 160)
    scraped = _scrape(metrics)
    assert scraped["gpu_operator_driver_rollout_soak_remaining_seconds"] == {(("stage", "canary"),): 500}
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_phase"], "phase")["canary"] == {"soaking": 1}
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_nodes"], "state")["canary"]["upgraded"] == 1
    metrics.record_rollout(soaking, T0 + 10_000)  # past its end, before the next round re-decides: never negative
    assert _scrape(metrics)["gpu_operator_driver_rollout_soak_remaining_seconds"] == {(("stage", "canary"),): 0}


def test_a_failed_canary_node_raises_the_halt_flag() -> None:
    metrics = ControllerMetrics()
    decision = _decide(_canary("upgrade-failed"))
    assert decision.halted
    metrics.record_rollout(decision, T0)
    scraped = _scrape(metrics)
    assert scraped["gpu_operator_driver_rollout_halted"] == {(): 1}
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_phase"], "phase") == {
        "canary": {"halted": 1}, "rest": {"waiting": 1}}
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_nodes"], "state")["canary"]["failed"] == 1


def test_a_fault_during_the_soak_halts_it_and_the_soak_time_left_goes_away() -> None:
    metrics = ControllerMetrics()
    active = _decide(_canary("upgrade-required"))
    soaking = _decide(_canary("upgrade-done", current=True), active.memory, T0 + 60)
    faulty = [StagedNode("c1", "gpu-canary", "upgrade-done", True, frozenset({"fallen-off-bus"})),
              *_canary("")[1:]]
    halted = _decide(faulty, soaking.memory, T0 + 120)
    assert halted.stages[0].soak_until is not None  # the gate still says when the soak would have ended
    metrics.record_rollout(halted, T0 + 120)
    scraped = _scrape(metrics)
    assert scraped["gpu_operator_driver_rollout_halted"] == {(): 1}
    assert _by_stage(scraped["gpu_operator_driver_rollout_stage_phase"], "phase")["canary"] == {"halted": 1}
    assert "gpu_operator_driver_rollout_soak_remaining_seconds" not in scraped


def test_no_rollout_configured_clears_every_series() -> None:
    metrics = ControllerMetrics()
    assert _scrape(metrics) == {}
    metrics.record_rollout(_decide(_canary("upgrade-failed")), T0)
    assert set(_scrape(metrics)) == ROLLOUT_METRIC_NAMES - {"gpu_operator_driver_rollout_soak_remaining_seconds"}
    metrics.record_rollout(None, T0 + 30)
    assert _scrape(metrics) == {}


def test_the_names_are_registered_so_a_clash_with_another_metric_is_refused() -> None:
    metrics = ControllerMetrics()
    for name in sorted(ROLLOUT_METRIC_NAMES):
        with pytest.raises(ValueError, match="Duplicated timeseries"):
            Gauge(name, "a clash", registry=metrics.registry)
