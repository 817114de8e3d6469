"""`diag` names a halted stage of a staged driver rollout and its reason, and says where a rollout under way waits.

The status it reads is what the controller publishes: the rollout gate's own decision
(:func:`gpu_operator.upgrade.stages.evaluate`, its `to_dict()` JSON under the status ConfigMap's `rollout`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from gpu_operator.diag.diagnosis import diagnose
from gpu_operator.diag.findings import EXIT_DEGRADED, EXIT_HEALTHY, Layer, Severity, Verdict
from gpu_operator.diag.rollout import rollout_findings
from gpu_operator.diag.snapshot import Snapshot
from gpu_operator.upgrade.stages import (RolloutMemory, RolloutPolicy, RolloutStage, StageDecision, StagedNode,
                                         evaluate)

NS = "gpu-operator"
POLICY = RolloutPolicy((RolloutStage("canary", ("gpu-canary",), soak_seconds=600), RolloutStage("rest", ("*",))))
T0 = 1_800_000_000.0


def _fleet(canary: str, current: bool = False, faults: frozenset[str] = frozenset()) -> list[StagedNode]:
    return [StagedNode("c1", "gpu-canary", canary, current, faults),
            StagedNode("r1", "gpu-main", "upgrade-required", False)]


def _decide(nodes: list[StagedNode], memory: RolloutMemory = RolloutMemory(), now: float = T0) -> StageDecision:
    return evaluate(POLICY, nodes, memory, "target-2", (), now)


def _soaking() -> StageDecision:
    active = _decide(_fleet("upgrade-required"))
    return _decide(_fleet("upgrade-done", current=True), active.memory, T0 + 60)


def _snapshot(rollout: str | None, at: float = T0) -> Snapshot:
    data = {} if rollout is None else {"rollout": rollout}
    status = {"metadata": {"name": "gpu-operator-status", "namespace": NS}, "data": data}
    return Snapshot(NS, datetime.fromtimestamp(at, timezone.utc), config_maps=[status])


def _published(decision: StageDecision, at: float = T0) -> Snapshot:
    return _snapshot(json.dumps(decision.to_dict()), at)


def test_a_failed_canary_node_halts_the_rollout_and_diag_names_the_stage_the_reason_and_the_retry() -> None:
    snapshot = _published(_decide(_fleet("upgrade-failed")))
    [finding] = rollout_findings(snapshot)
    assert (finding.check, finding.layer, finding.severity) == ("rollout-halted", Layer.DRIVER, Severity.WARNING)
    assert finding.subject == "rollout-stage/canary"
    assert finding.what.startswith("the staged driver rollout is halted at stage canary: "
                                   "the driver upgrade failed on c1; waiting behind it: rest")
    assert "kubectl label node c1 nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite" in finding.what
    assert f"kubectl get events -n {NS} --field-selector reason=GPUDriverRolloutHalted" in finding.next
    diagnosis = diagnose(snapshot)
    assert diagnosis.exit_status == EXIT_DEGRADED
    assert {v.layer: v.verdict for v in diagnosis.verdicts}[Layer.DRIVER] is Verdict.DEGRADED


def test_a_fault_during_the_soak_halts_until_the_next_driver_change() -> None:
    soaking = _soaking()
    halted = _decide(_fleet("upgrade-done", current=True, faults=frozenset({"fallen-off-bus"})), soaking.memory,
                     T0 + 120)
    [finding] = rollout_findings(_published(halted, T0 + 120))
    assert finding.check == "rollout-halted" and finding.subject == "rollout-stage/canary"
    assert "halted at stage canary: GPU faults during its soak on c1 (fallen-off-bus)" in finding.what
    assert "holds until the next driver change" in finding.what and "kubectl label" not in finding.what


def test_a_soaking_stage_is_said_with_the_time_it_has_left() -> None:
    [finding] = rollout_findings(_published(_soaking(), T0 + 180))
    assert (finding.check, finding.severity, finding.subject) == ("rollout-soaking", Severity.INFO,
                                                                  "rollout-stage/canary")
    assert finding.what == "stage canary soaks for 8m more before the next stage starts; waiting behind it: rest"


def test_a_soak_over_while_the_rollout_has_not_moved_on_degrades_the_driver_layer() -> None:
    [finding] = rollout_findings(_published(_soaking(), T0 + 1000))  # the controller has not decided since
    assert (finding.check, finding.severity) == ("rollout-soaking", Severity.WARNING)
    assert finding.what.startswith("stage canary's soak ended 5m ago but the rollout has not moved on: "
                                   "stage canary: soaking until")
    assert f"kubectl logs -n {NS} deployment/gpu-operator" in finding.next


def test_a_soak_without_its_end_recorded_is_still_said() -> None:
    record = _soaking().to_dict()
    record["stages"][0]["soakUntil"] = "soon"
    [finding] = rollout_findings(_snapshot(json.dumps(record)))
    assert (finding.check, finding.severity) == ("rollout-soaking", Severity.INFO)
    assert finding.what == "stage canary soaks before the next stage starts; waiting behind it: rest"


def test_the_stage_upgrading_is_worth_knowing() -> None:
    [finding] = rollout_findings(_published(_decide(_fleet("cordon-required"))))
    assert (finding.check, finding.severity, finding.subject) == ("rollout-waiting", Severity.INFO,
                                                                  "rollout-stage/canary")
    assert finding.what == ("the staged driver rollout is upgrading stage canary: stage canary: 0 of 1 node(s) "
                            "upgraded; waiting behind it: rest")
    assert diagnose(_published(_decide(_fleet("cordon-required")))).exit_status == EXIT_HEALTHY


@pytest.mark.parametrize("rollout", [None, "", ": [", '"a string"', '{"stages": "none", "halted": ""}'])
def test_no_rollout_or_an_unreadable_record_says_nothing_and_does_not_crash(rollout: str | None) -> None:
    assert rollout_findings(_snapshot(rollout)) == []
    assert rollout_findings(Snapshot(NS, datetime.now(timezone.utc))) == []


def test_a_finished_rollout_says_nothing() -> None:
    done = _decide([StagedNode("c1", "gpu-canary", "upgrade-done", True),
                    StagedNode("r1", "gpu-main", "upgrade-done", True)])
    assert done.finished
    assert rollout_findings(_published(done)) == []
