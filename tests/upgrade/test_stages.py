"""The staged rollout's gate: which nodes the upgrade may admit, stage by stage, soak and halts included.

The property tests run the gate in front of NVIDIA's planner over the simulated fleet of
tests/upgrade/simulation.py (crashing drivers, PDBs, nodes in any state): whatever the node states, no node is
admitted outside the active stage, no later stage admits a node while an earlier one is unsettled or soaking, and
a failure in a stage keeps every later stage untouched.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_operator.upgrade import State, UpgradePolicy, plan
from gpu_operator.upgrade.observation import UPGRADE_REQUESTED_ANNOTATION, Action, ActionKind
from gpu_operator.upgrade.stages import (
    REST,
    RolloutMemory,
    RolloutPolicy,
    RolloutStage,
    StagedNode,
    evaluate,
    gate,
    read_record,
    stage_of,
)
from tests.upgrade.simulation import NEW, SimNode, tick, writes

CANARY_REST = RolloutPolicy((RolloutStage("canary", ("canary",), soak_seconds=600),
                             RolloutStage("rest", (REST,), soak_seconds=0)))


def _node(name: str, pool: str, state: str = "", current: bool = False,
          faults: frozenset[str] = frozenset()) -> StagedNode:
    return StagedNode(name, pool, state, current, faults)


def _fleet(canary: tuple[str, bool], *others: tuple[str, bool]) -> list[StagedNode]:
    return [_node("c-0", "canary", *canary), *(_node(f"r-{i}", "train", *other) for i, other in enumerate(others))]


def test_a_pool_belongs_to_the_first_stage_naming_it_and_star_takes_the_rest() -> None:
    policy = RolloutPolicy((RolloutStage("a", ("x",)), RolloutStage("b", ("x", REST)), RolloutStage("c", ("y",))))
    assert [stage_of(policy, pool) for pool in ("x", "y", "z")] == ["a", "c", "b"]
    assert stage_of(RolloutPolicy((RolloutStage("a", ("x",)),)), "z") == REST


def test_the_canary_goes_first_and_the_rest_waits() -> None:
    decision = evaluate(CANARY_REST, _fleet(("upgrade-required", False), ("upgrade-required", False)),
                        RolloutMemory(), "t1", (), now=100.0)
    assert decision.active == "canary" and decision.admissible == {"c-0"}
    assert [stage.phase for stage in decision.stages] == ["active", "waiting"]
    assert decision.memory.started == {"canary"} and not decision.halted


def test_a_settled_canary_soaks_then_the_rest_goes() -> None:
    fleet = _fleet(("upgrade-done", True), ("upgrade-required", False))
    memory = RolloutMemory("t1", frozenset({"canary"}))
    soaking = evaluate(CANARY_REST, fleet, memory, "t1", (), now=1000.0)
    assert soaking.admissible == frozenset() and soaking.stages[0].phase == "soaking"
    assert soaking.stages[0].soak_until == 1600.0 and "soaking until 1600" in soaking.waiting_on
    still = evaluate(CANARY_REST, fleet, soaking.memory, "t1", (), now=1599.0)
    assert still.admissible == frozenset(), "the soak counts from when the stage settled, not from each round"
    after = evaluate(CANARY_REST, fleet, still.memory, "t1", (), now=1600.0)
    assert after.active == "rest" and after.admissible == {"r-0"}
    assert [stage.phase for stage in after.stages] == ["done", "active"]


def test_a_stage_without_work_in_this_rollout_passes_without_a_soak() -> None:
    """Only the rest's driver changed: the canary had nothing to upgrade, so nothing waits on its soak."""
    fleet = _fleet(("", True), ("upgrade-required", False))
    decision = evaluate(CANARY_REST, fleet, RolloutMemory(), "t2", (), now=5.0)
    assert [stage.phase for stage in decision.stages] == ["skipped", "active"]
    assert decision.admissible == {"r-0"}


def test_a_failed_canary_node_halts_the_rollout_while_it_stays_failed() -> None:
    fleet = _fleet(("upgrade-failed", True), ("upgrade-required", False))
    decision = evaluate(CANARY_REST, fleet, RolloutMemory("t1", frozenset({"canary"})), "t1", (), now=10.0)
    assert decision.halted == "stage canary: the driver upgrade failed on c-0"
    assert decision.admissible == frozenset() and decision.active == "canary"
    assert not decision.memory.halted, "a node's failure is read from the node every round, not remembered"
    retried = evaluate(CANARY_REST, _fleet(("upgrade-required", False), ("upgrade-required", False)),
                       decision.memory, "t1", (), now=20.0)
    assert retried.admissible == {"c-0"} and not retried.halted


def test_a_fault_or_a_listed_alert_during_the_soak_halts_until_the_next_rollout() -> None:
    policy = RolloutPolicy(CANARY_REST.stages, alerts=("GpuXidErrors",))
    memory = RolloutMemory("t1", frozenset({"canary"}), {"canary": 100.0})
    faulty = [_node("c-0", "canary", "upgrade-done", True, frozenset({"GpuFallenOffBus"})),
              _node("r-0", "train", "upgrade-required")]
    halted = evaluate(policy, faulty, memory, "t1", (), now=200.0)
    assert halted.halted == "stage canary: GPU faults during its soak on c-0 (GpuFallenOffBus)"
    assert halted.memory.halted == halted.halted and halted.admissible == frozenset()
    healed = [_node("c-0", "canary", "upgrade-done", True), _node("r-0", "train", "upgrade-required")]
    assert evaluate(policy, healed, halted.memory, "t1", (), now=10_000.0).halted == halted.halted
    fresh = evaluate(policy, healed, halted.memory, "t2", (), now=10_000.0)
    assert not fresh.halted and fresh.admissible == {"r-0"}, "the next rollout (a new target) starts over"
    alert = evaluate(policy, healed, memory, "t1", ("GpuXidErrors", "Unlisted"), now=200.0)
    assert alert.halted == "stage canary: alert(s) firing during its soak: GpuXidErrors"
    assert not evaluate(policy, healed, memory, "t1", ("Unlisted",), now=200.0).halted


def test_the_last_stage_soak_gates_nothing_and_the_rollout_finishes() -> None:
    fleet = _fleet(("upgrade-done", True), ("upgrade-done", True))
    memory = RolloutMemory("t1", frozenset({"canary", "rest"}), {"canary": 0.0})
    decision = evaluate(RolloutPolicy((RolloutStage("canary", ("canary",), 600),
                                       RolloutStage("rest", (REST,), 600))), fleet, memory, "t1", (), now=700.0)
    assert decision.finished and decision.admissible is None


def test_the_memory_round_trips_and_a_bad_record_starts_over() -> None:
    memory = RolloutMemory("t", frozenset({"a"}), {"a": 3.0}, "stage a: why")
    assert RolloutMemory.from_dict(memory.to_dict()) == memory
    assert RolloutMemory.from_dict({"settledAt": {"a": "soon"}}) == RolloutMemory()
    assert RolloutMemory.from_dict("garbage") == RolloutMemory()


# --- properties over the simulated fleet --------------------------------------------------------------------------

POOLS = ("canary", "train", "infer", "vgpu")


@st.composite
def staged_fleets(draw: st.DrawFn) -> tuple[dict[str, SimNode], dict[str, str], RolloutPolicy, UpgradePolicy]:
    count = draw(st.integers(2, 16))
    nodes, pools = {}, {}
    for index in range(count):
        name = f"gpu-{index:02d}"
        nodes[name] = SimNode(
            name, unschedulable=draw(st.integers(0, 9)) == 0, ready=draw(st.integers(0, 14)) != 0,
            gpu_pods=draw(st.integers(0, 2)), install_ticks=draw(st.integers(0, 3)),
            crash_ticks=draw(st.sampled_from([0, 0, 0, 0, 13, None])), pdb_blocks=draw(st.integers(0, 9)) == 0,
            validation_never=draw(st.integers(0, 14)) == 0,
            state=draw(st.sampled_from([State.UNKNOWN, State.UNKNOWN, State.DONE, State.REQUIRED,
                                        State.CORDON, State.POD_RESTART, State.FAILED])),
        )
        pools[name] = draw(st.sampled_from(POOLS))
    order = draw(st.permutations(POOLS))
    cut = draw(st.integers(1, len(POOLS)))
    stages = [RolloutStage(f"s{i}", (pool,), draw(st.sampled_from([0, 60, 300]))) for i, pool in enumerate(order[:cut])]
    if draw(st.booleans()):
        stages.append(RolloutStage("rest", (REST,), 0))
    policy = UpgradePolicy(max_parallel_upgrades=draw(st.integers(0, 3)), max_unavailable="100%",
                           drain=draw(st.booleans()), validation_timeout_seconds=300)
    return nodes, pools, RolloutPolicy(tuple(stages)), policy


def _staged(nodes: dict[str, SimNode], pools: dict[str, str]) -> list[StagedNode]:
    return [StagedNode(node.name, pools[node.name], node.state.value,
                       node.driver_revision == NEW and not node.orphaned
                       and UPGRADE_REQUESTED_ANNOTATION not in node.annotations)
            for node in nodes.values() if node.driver_revision is not None]


def _admitted(nodes: dict[str, SimNode], actions: list[Action]) -> set[str]:
    """The nodes this round's actions take from upgrade-required into the upgrade."""
    return {action.node for action in actions if action.kind is ActionKind.SET_STATE
            and nodes[action.node].state is State.REQUIRED
            and action.value in (State.CORDON.value, State.POD_RESTART.value)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(staged_fleets())
def test_no_node_is_admitted_outside_the_active_stage_whatever_the_node_states(
        fleet: tuple[dict[str, SimNode], dict[str, str], RolloutPolicy, UpgradePolicy]) -> None:
    nodes, pools, rollout, policy = fleet
    stage_names = [stage.name for stage in rollout.stages] + [REST]
    memory, now, halted_at = RolloutMemory(), 0.0, None
    for _ in range(200):
        staged = _staged(nodes, pools)
        decision = evaluate(rollout, staged, memory, "target", (), now)
        memory = decision.memory
        actions = plan(gate([node.observe() for node in nodes.values()], decision), policy, now)
        admitted = _admitted(nodes, actions)
        if admitted:
            assert decision.admissible is not None or decision.finished, decision
            assert decision.admissible is None or admitted <= decision.admissible, (admitted, decision)
            stages = {stage_of(rollout, pools[name]) for name in admitted}
            assert stages <= {decision.active} or decision.admissible is None, (stages, decision.active)
            for name in admitted:  # every earlier stage is settled and past its soak
                index = stage_names.index(stage_of(rollout, pools[name]))
                earlier = [node for node in staged if stage_names.index(stage_of(rollout, node.pool)) < index]
                assert all(node.settled for node in earlier), (name, earlier)
                for stage in rollout.stages[:index]:  # and each that had work soaked its time
                    if stage.name in decision.memory.started:
                        assert decision.memory.settled_at[stage.name] + stage.soak_seconds <= now, (stage, now)
        if decision.halted and halted_at is None:
            halted_at = decision.active
        for write in writes(nodes, actions):
            write()
        tick(nodes)
        now += 30


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 10), st.sampled_from([0, 120]), st.integers(1, 3))
def test_a_crash_looping_canary_leaves_every_other_pool_untouched(count: int, soak: int, parallel: int) -> None:
    """The acceptance scenario in the small: the canary's new driver never comes up; no node of another pool is
    ever cordoned or leaves upgrade-required, and the gate names the halt."""
    nodes = {f"n-{i}": SimNode(f"n-{i}", state=State.DONE, crash_ticks=None if i == 0 else 0) for i in range(count)}
    pools = {name: "canary" if name == "n-0" else "train" for name in nodes}
    rollout = RolloutPolicy((RolloutStage("canary", ("canary",), soak), RolloutStage("rest", (REST,))))
    policy = UpgradePolicy(max_parallel_upgrades=parallel, max_unavailable="100%")
    memory, now = RolloutMemory(), 0.0
    for node in nodes.values():
        node.state = State.DONE
    decision = None
    for _ in range(80):
        decision = evaluate(rollout, _staged(nodes, pools), memory, "target", (), now)
        memory = decision.memory
        for write in writes(nodes, plan(gate([n.observe() for n in nodes.values()], decision), policy, now)):
            write()
        tick(nodes)
        now += 30
    assert decision is not None and decision.halted == "stage canary: the driver upgrade failed on n-0"
    assert nodes["n-0"].state is State.FAILED
    for name, node in nodes.items():
        if name != "n-0":
            assert node.state is State.REQUIRED and not node.unschedulable, node


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '"halted"'])
def test_a_missing_or_unreadable_record_reads_as_none(text: str | None) -> None:
    """The controller, `diag` and `upgrade status` read the published decision with one reader: a record that is
    not a JSON object is no rollout (and the gate starts afresh), never an error."""
    assert read_record(text) == {}


def test_a_published_decision_reads_back_with_its_memory() -> None:
    decision = evaluate(RolloutPolicy((RolloutStage("canary", ("a",), 60),)), [StagedNode("n", "a", "", False)],
                        RolloutMemory(), "t", (), 0.0)
    record = read_record(json.dumps(decision.to_dict()))
    assert record["active"] == "canary" and RolloutMemory.from_dict(record["memory"]) == decision.memory
