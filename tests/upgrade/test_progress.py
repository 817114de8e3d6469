"""The rollout report: nodes by state per stage and pool, failures with reasons, the observed per-node time and
the estimate of what is left."""

from __future__ import annotations

import pytest

from gpu_operator.upgrade import CLUSTER_GROUP
from gpu_operator.upgrade.progress import NodeProgress, Transition, per_node_seconds, progress


def _walk(node: str, start: float, done: float, restart_only: bool = False) -> list[Transition]:
    first = "pod-restart-required" if restart_only else "cordon-required"
    return [Transition(node, "upgrade-required", start - 5), Transition(node, first, start),
            Transition(node, "validation-required", (start + done) / 2), Transition(node, "upgrade-done", done)]


def test_the_per_node_time_runs_from_admission_to_done_and_is_the_median() -> None:
    transitions = [*_walk("a", 100, 400), *_walk("b", 200, 300, restart_only=True), *_walk("c", 0, 1000)]
    assert per_node_seconds(transitions) == 300
    assert per_node_seconds([Transition("a", "cordon-required", 5)]) is None, "nobody finished: no estimate"


def test_a_node_upgraded_again_is_timed_from_its_latest_admission() -> None:
    transitions = [*_walk("a", 0, 100), Transition("a", "upgrade-required", 1000),
                   Transition("a", "cordon-required", 1010), Transition("a", "upgrade-done", 1060)]
    assert per_node_seconds(transitions) == 50


def test_the_report_counts_per_stage_and_pool_and_estimates_from_the_parallelism() -> None:
    nodes = [NodeProgress("c-0", "canary", "canary", "upgrade-done", True),
             NodeProgress("t-0", "train", "rest", "cordon-required", False),
             NodeProgress("t-1", "train", "rest", "upgrade-required", False),
             NodeProgress("t-2", "train", "rest", "upgrade-required", False),
             NodeProgress("t-3", "train", "rest", "", False),
             NodeProgress("i-0", "infer", "rest", "upgrade-failed", True, "the validator was not Ready within 600 s")]
    report = progress(nodes, _walk("c-0", 0, 120), max_parallel={CLUSTER_GROUP: 2}, soaks_ahead=0.0)
    assert (report.nodes, report.settled) == (6, 1)
    assert report.failed == {"i-0": "the validator was not Ready within 600 s"}
    rest = {(p.stage, p.pool): p for p in report.pools}[("rest", "train")]
    assert rest.by_state == {"cordon-required": 1, "outdated": 1, "upgrade-required": 2}, (
        "a node not yet labelled but on an old driver shows as outdated, not done")
    assert report.per_node_seconds == 120 and report.seconds_left == 2 * 120, "4 left at 2 at once: 2 rounds"
    assert not report.finished
    assert report.to_dict()["pools"][0] == {"stage": "canary", "pool": "canary", "nodes": 1, "upgraded": 1,
                                            "byState": {"upgrade-done": 1}, "failed": {}}


@pytest.mark.parametrize(("parallel", "soaks", "left"), [(0, 0.0, 60.0), (1, 0.0, 180.0), (1, 600.0, 780.0)])
def test_no_limit_is_one_round_and_the_soaks_ahead_add(parallel: int, soaks: float, left: float) -> None:
    nodes = [NodeProgress(f"n-{i}", "p", "", "upgrade-required", False) for i in range(3)]
    report = progress([*nodes, NodeProgress("done", "p", "", "upgrade-done", True)], _walk("done", 0, 60),
                      {CLUSTER_GROUP: parallel}, soaks)
    assert report.seconds_left == left


def test_each_driver_group_goes_within_its_own_limit_and_the_slowest_sets_the_time() -> None:
    """Driver groups upgrade side by side (gpu_operator.upgrade.groups): 4 cluster-driver nodes at 2 at once are
    2 rounds, 3 nodes of the t4 group at 1 at once are 3; a group the settings do not name takes the cluster's."""
    nodes = [*(NodeProgress(f"c-{i}", "a100", "", "upgrade-required", False) for i in range(4)),
             *(NodeProgress(f"t-{i}", "t4", "", "upgrade-required", False, group="t4") for i in range(3)),
             NodeProgress("done", "a100", "", "upgrade-done", True)]
    walk = _walk("done", 0, 60)
    assert progress(nodes, walk, {CLUSTER_GROUP: 2, "t4": 1}).seconds_left == 3 * 60
    assert progress(nodes, walk, {CLUSTER_GROUP: 2, "t4": 0}).seconds_left == 2 * 60
    assert progress(nodes, walk, {CLUSTER_GROUP: 4}).seconds_left == 1 * 60


def test_a_finished_rollout_has_nothing_left() -> None:
    report = progress([NodeProgress("a", "p", "", "upgrade-done", True), NodeProgress("b", "p", "", "", True)],
                      _walk("a", 0, 60), {CLUSTER_GROUP: 1}, 900.0)
    assert report.finished and report.seconds_left == 0
