"""`gpu-operator upgrade status`: read-only over a (fake) API server, the report per stage and pool, the halt and
its reason, the estimate from the controller's Events."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_operator.diag.fetch import connect
from gpu_operator.diag.upgrade_status import format_progress, read_upgrade, upgrade_progress
from gpu_operator.upgrade.stages import REST, RolloutMemory, RolloutPolicy, RolloutStage, StagedNode, evaluate
from tests.agents.kube.fake_apiserver import FakeApiServer
from tests.diag.upgrade_cluster import NS, POOLS, STATES, config_map, event, node, pod, revision

def _rollout() -> str:
    policy = RolloutPolicy((RolloutStage("canary", ("canary",), 1800), RolloutStage("rest", (REST,))))
    nodes = [StagedNode(name, POOLS[name], STATES[name], name == "c-0") for name in POOLS]
    decision = evaluate(policy, nodes, RolloutMemory(), "t", (), now=0.0)
    return json.dumps(decision.to_dict())  # as the controller publishes it (status.status_data)


def test_a_halted_canary_is_named_with_its_reason_and_the_rest_is_untouched(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        for obj in [*(node(name) for name in POOLS), pod("c-0", "new"), pod("t-0", "old"), pod("t-1", "old"),
                    revision(1, "old"), revision(2, "new"),
                    event("other", "cordon-required", "2026-11-29T10:00:00Z"),
                    event("other", "upgrade-done", "2026-11-29T10:04:00Z"),
                    config_map("gpu-operator-controller", {"controller.json": json.dumps(
                        {"upgradePolicy": {"maxParallelUpgrades": 1}})}),
                    config_map("gpu-operator-status", {"rollout": _rollout()})]:
            server.add(obj)
        client, _ = connect(server.kubeconfig(tmp_path), None)
        snapshot = read_upgrade(client, "fake", NS)
        methods = {request.method for request in server.requests}
    assert methods == {"GET"}, "upgrade status only reads"
    report = upgrade_progress(snapshot)
    assert report.halted == "stage canary: the driver upgrade failed on c-0"
    assert report.failed == {"c-0": "the new driver pod restarted more than 10 times without becoming Ready"}
    assert report.per_node_seconds == 240
    text = format_progress(report)
    assert "HALTED: stage canary: the driver upgrade failed on c-0" in text
    assert "canary (halted) canary" in text and "rest (waiting) train" in text
    assert "0/2  upgrade-required 2" in text
    assert "failed: c-0: the new driver pod restarted" in text
    assert json.loads(json.dumps(report.to_dict()))["pools"][1]["byState"] == {"upgrade-required": 2}


def test_without_a_controller_record_the_report_still_counts_per_pool() -> None:
    """Before the controller labels anything: the node on the newest revision counts as upgraded, the other as
    outdated (not done)."""
    from gpu_operator.diag.upgrade_status import UpgradeSnapshot

    unlabelled = [{**node, "metadata": {**node["metadata"], "labels": {"kubernetes.azure.com/agentpool": "train"}}}
                  for node in (node("t-0"), node("t-1"))]
    snapshot = UpgradeSnapshot(now=0.0, nodes=unlabelled, driver_pods=[pod("t-0", "new"), pod("t-1", "old")],
                               newest={"nvidia-driver-daemonset": "new"})
    report = upgrade_progress(snapshot)
    assert (report.nodes, report.settled, report.halted) == (2, 1, "")
    text = format_progress(report)
    assert "time left: no estimate yet" in text
    assert "-            train                  1/2  outdated 1, upgrade-done 1" in text, text
