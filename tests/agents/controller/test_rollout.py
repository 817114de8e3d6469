"""The staged rollout in the controller's reconcile: canary first, the rest after its soak, halts that hold.

Three pools on one driver DaemonSet whose template changed (every node's pod is at the old revision): stage
`canary` (pool canary, soak 60 s) then `rest` (`*`). The in-memory cluster (tests/agents/controller/fake_cluster.py)
plays the API server, the DaemonSet controller and the kubelet, with time passing 10 s per round; the gate's memory
goes from each plan to the next round, as the loop keeps it in the status ConfigMap.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from gpu_operator.agents.controller.cluster_state import ClusterState
from gpu_operator.agents.controller.driver_owners import POOL_LABEL
from gpu_operator.agents.controller.reconcile import (
    ALERTS_POLL_SECONDS,
    ALERTS_RETRY_SECONDS,
    UPGRADE_ENABLED_ANNOTATION,
    reconcile,
)
from gpu_operator.agents.controller.rollout import rollout_notices, rollout_target
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.controller.status import census, operand_status, status_data
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy
from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
from gpu_operator.upgrade.stages import STATUS_KEY, RolloutMemory, RolloutPolicy, RolloutStage, StageDecision
from tests.agents.controller.fake_cluster import NFD_PCI, FakeCluster, FakeNode

OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])
LABELLED = {**NFD_PCI, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.client": "true",
            **{f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}}
POOLS = {"canary-0": "canary", "b-0": "pool-b", "b-1": "pool-b", "c-0": "pool-c", "c-1": "pool-c"}
SOAK = 60
POLICY = RolloutPolicy((RolloutStage("canary", ("canary",), SOAK), RolloutStage("rest", ("*",))), ("GPUXidCritical",))
SETTINGS = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                              UpgradePolicy(max_parallel_upgrades=2, max_unavailable="100%"), rollout=POLICY)


def _cluster(**node_fields: Mapping[str, object]) -> FakeCluster:
    return FakeCluster({name: FakeNode(name, labels={**LABELLED, POOL_LABEL: pool, STATE_LABEL: "upgrade-done"},
                                       annotations={UPGRADE_ENABLED_ANNOTATION: "true"},
                                       **node_fields.get(name, {}))  # type: ignore[arg-type]
                        for name, pool in POOLS.items()})


@dataclasses.dataclass
class Run:
    """What a run saw: each round's time, decision and the nodes cordoned then."""

    cluster: FakeCluster
    memory: RolloutMemory = RolloutMemory()
    faults: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    alerts: frozenset[str] | None = frozenset()
    rounds: list[tuple[float, StageDecision, frozenset[str]]] = dataclasses.field(default_factory=list)

    def state(self) -> ClusterState:
        return dataclasses.replace(self.cluster.state(), rollout_memory=self.memory, node_faults=self.faults,
                                   firing_alerts=self.alerts)

    def go(self, rounds: int) -> StageDecision:
        for _ in range(rounds):
            plan = reconcile(self.state(), SETTINGS, self.cluster.now)
            assert plan.rollout is not None
            self.memory = plan.rollout.memory
            self.cluster.carry_out(plan)
            cordoned = frozenset(name for name, node in self.cluster.nodes.items() if node.unschedulable)
            self.rounds.append((self.cluster.now, plan.rollout, cordoned))
            self.cluster.tick(10)
        return self.rounds[-1][1]

    def first_cordon(self, node: str) -> float:
        return min(at for at, _, cordoned in self.rounds if node in cordoned)

    def states(self) -> dict[str, str]:
        return {name: node.labels.get(STATE_LABEL, "") for name, node in self.cluster.nodes.items()}


def test_the_canary_upgrades_first_and_the_rest_only_after_its_soak() -> None:
    run = Run(_cluster())
    decision = run.go(60)
    assert run.states() == dict.fromkeys(POOLS, "upgrade-done") and decision.finished
    canary_done = next(at for at, d, _ in run.rounds if d.stages[0].phase == "soaking")
    rest = [name for name in POOLS if name != "canary-0"]
    assert run.first_cordon("canary-0") < canary_done
    assert min(run.first_cordon(name) for name in rest) >= canary_done + SOAK
    assert all(node.driver == run.cluster.revision for node in run.cluster.nodes.values())
    phases = [tuple(stage.phase for stage in d.stages) for _, d, _ in run.rounds]
    assert phases[0] == ("active", "waiting") and ("soaking", "waiting") in phases and phases[-1] == ("done", "done")


def test_a_crash_looping_canary_halts_the_rollout_and_no_other_pool_is_touched() -> None:
    run = Run(_cluster(**{"canary-0": {"crash_loop": True}}))
    decision = run.go(40)
    assert decision.halted.startswith("stage canary: the driver upgrade failed on canary-0"), decision.halted
    assert decision.admissible == frozenset()
    assert run.states() == {"canary-0": "upgrade-failed", **dict.fromkeys(list(POOLS)[1:], "upgrade-required")}
    assert all(cordoned <= {"canary-0"} for _, _, cordoned in run.rounds)
    assert [stage.phase for stage in decision.stages] == ["halted", "waiting"]


def test_a_gpu_fault_during_the_soak_halts_and_the_halt_holds_after_the_fault_is_gone() -> None:
    run = Run(_cluster())
    while not run.rounds or run.rounds[-1][1].stages[0].phase != "soaking":
        run.go(1)
    run.faults = {"canary-0": frozenset({"reset"})}
    decision = run.go(1)
    assert decision.halted == "stage canary: GPU faults during its soak on canary-0 (reset)"
    run.faults = {}
    decision = run.go(20)
    assert decision.halted and decision.memory.halted == decision.halted
    assert all(state == "upgrade-required" for name, state in run.states().items() if name != "canary-0")


def test_a_listed_alert_firing_during_the_soak_halts_it() -> None:
    run = Run(_cluster())
    while not run.rounds or run.rounds[-1][1].stages[0].phase != "soaking":
        run.go(1)
    run.alerts = frozenset({"SomeOtherAlert"})
    assert not run.go(1).halted  # only the listed alerts count
    run.alerts = frozenset({"GPUXidCritical"})
    assert run.go(1).halted == "stage canary: alert(s) firing during its soak: GPUXidCritical"


def test_unreadable_alerts_keep_a_passed_soak_from_ending_until_they_can_be_read() -> None:
    run = Run(_cluster(), alerts=None)
    run.go(30)
    decision = run.rounds[-1][1]
    assert decision.stages[0].phase == "soaking" and "could not be read from Prometheus" in decision.waiting_on
    assert all(state == "upgrade-required" for name, state in run.states().items() if name != "canary-0")
    plan = reconcile(run.state(), SETTINGS, run.cluster.now)
    assert plan.requeue_after == ALERTS_RETRY_SECONDS
    run.alerts = frozenset()
    assert run.go(40).finished


def test_the_round_comes_back_when_the_soak_ends_and_while_it_watches_alerts() -> None:
    run = Run(_cluster())
    while not run.rounds or run.rounds[-1][1].stages[0].phase != "soaking":
        run.go(1)
    quiet = dataclasses.replace(SETTINGS, rollout=dataclasses.replace(POLICY, alerts=()))
    plan = reconcile(run.state(), quiet, run.cluster.now)
    soak_until = plan.rollout.stages[0].soak_until  # type: ignore[union-attr]
    assert plan.requeue_after == soak_until - run.cluster.now + 1.0
    assert reconcile(run.state(), SETTINGS, run.cluster.now).requeue_after == ALERTS_POLL_SECONDS


def test_a_new_target_starts_a_new_rollout_with_the_halt_forgotten() -> None:
    cluster = _cluster()
    state = cluster.state()
    target = rollout_target(state, SETTINGS)
    assert target and target != rollout_target(dataclasses.replace(cluster, revision="rev-newer").state(), SETTINGS)
    halted = RolloutMemory(target, frozenset({"canary"}), {"canary": cluster.now}, "stage canary: an old halt")
    plan = reconcile(dataclasses.replace(state, rollout_memory=halted), SETTINGS, cluster.now)
    assert plan.rollout is not None and plan.rollout.halted == "stage canary: an old halt"
    newer = dataclasses.replace(cluster, revision="rev-newer").state()
    plan = reconcile(dataclasses.replace(newer, rollout_memory=halted), SETTINGS, cluster.now)
    assert plan.rollout is not None and not plan.rollout.halted and plan.rollout.active == "canary"


def test_without_a_rollout_every_node_is_admitted_at_once_and_nothing_is_published() -> None:
    cluster = _cluster()
    plain = dataclasses.replace(SETTINGS, rollout=None)
    for _ in range(3):
        plan = reconcile(cluster.state(), plain, cluster.now)
        cluster.carry_out(plan)
        cluster.tick(10)
    assert plan.rollout is None
    assert sum(node.unschedulable for node in cluster.nodes.values()) == 2  # maxParallelUpgrades, any pool


def test_the_status_carries_the_decision_and_the_notices_say_what_changed() -> None:
    run = Run(_cluster(**{"canary-0": {"crash_loop": True}}))
    first = run.go(1)
    state = run.state()
    operands = operand_status(state.daemonsets.values())
    data = status_data(state, census(state, (), 2, operands), operands, (), first)
    assert json.loads(data[STATUS_KEY]) == first.to_dict() and "driver rollout at stage canary" in data["summary"]
    assert STATUS_KEY not in status_data(state, census(state, (), 2, operands), operands)
    started = rollout_notices(None, first)
    assert [(n.reason, n.warning) for n in started] == [("GPUDriverRolloutStage", False)]
    assert "stage canary started (1 node(s))" in started[0].message
    assert rollout_notices(first, first) == []
    halted = run.go(40)
    notices = rollout_notices(first, halted)
    assert [(n.reason, n.warning) for n in notices] == [("GPUDriverRolloutHalted", True)]
    assert "canary-0" in notices[0].message
    assert rollout_notices(halted, halted) == []


def test_a_change_to_several_drivers_at_once_is_one_staged_rollout() -> None:
    """Two drivers (the cluster's on the canary pool, t4's of its own on the others) change in one `pulumi up`:
    one target, so one rollout: t4's nodes wait for the canary although t4's own policy has room for them."""
    from gpu_operator.agents.controller.cluster_state import DaemonSetFacts, NodeFacts, PodFacts
    from gpu_operator.agents.controller.settings import DriverGroupSettings

    t4_ds, cluster_ds = "nvidia-gpu-driver-ubuntu22.04-54bf6fb65b", "nvidia-driver-daemonset"
    group = DriverGroupSettings("t4", (t4_ds,), UpgradePolicy(max_parallel_upgrades=4, max_unavailable="100%"))
    settings = dataclasses.replace(SETTINGS, driver_groups=(group,))
    members = {"canary-0": ("canary", cluster_ds), "b-0": ("pool-b", t4_ds), "b-1": ("pool-b", t4_ds)}
    nodes = {name: NodeFacts(name, {**LABELLED, POOL_LABEL: pool, STATE_LABEL: "upgrade-required"},
                             {UPGRADE_ENABLED_ANNOTATION: "true"}) for name, (pool, _) in members.items()}
    pods = tuple(PodFacts(f"driver-{name}", name, ds, ds, "rev-old", "d", ready=True, running_ready=True)
                 for name, (_, ds) in members.items())
    daemonsets = {cluster_ds: DaemonSetFacts(cluster_ds, "rev-new", "d", desired=1, app=cluster_ds),
                  t4_ds: DaemonSetFacts(t4_ds, "rev-new", "d", desired=2, app=t4_ds)}
    state = ClusterState(nodes, pods, daemonsets)
    plan = reconcile(state, settings, 0.0)
    admitting = ("cordon-required", "pod-restart-required")  # the latter: restart-only, the config digest unchanged
    admitted = sorted(p.node for p in plan.patches if p.labels.get(STATE_LABEL) in admitting)
    assert admitted == ["canary-0"] and plan.rollout is not None and plan.rollout.active == "canary"
    one_changed = dataclasses.replace(state, daemonsets={**daemonsets, t4_ds: dataclasses.replace(
        daemonsets[t4_ds], revision="rev-old")})
    assert rollout_target(one_changed, settings) != rollout_target(state, settings)
