"""The controller's reconcile: labelling and upgrade steps merged into one patch per node, pod actions first."""

from __future__ import annotations

import dataclasses

import pytest

from gpu_operator.agents.controller.cluster_state import ClusterState, DaemonSetFacts, NodeFacts, NodePods, PodFacts
from gpu_operator.agents.controller.reconcile import (
    CLAIMS_REQUEUE_SECONDS,
    POD_STEP_REQUEUE_SECONDS,
    UNSCHEDULED_REQUEUE_SECONDS,
    UPGRADE_ENABLED_ANNOTATION,
    PodAction,
    node_groups,
    nodes_needing_claims,
    nodes_needing_pods,
    observe,
    reconcile,
    unscheduled_driver_daemonsets,
)
from gpu_operator.agents.controller.settings import ControllerSettings, PodStepOptions
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy
from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
from gpu_operator.upgrade.observation import (
    FAILURE_ANNOTATION,
    INITIAL_STATE_ANNOTATION,
    SAFE_LOAD_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    VALIDATION_START_ANNOTATION,
)
from tests.agents.controller.fake_cluster import DRIVER_DS, DRIVER_LABEL, NEW, NFD_PCI, OLD, FakeCluster, FakeNode

OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])  # NVIDIA's whole container set
SETTINGS = ControllerSettings("gpu-operator", LabellingPolicy(), UpgradePolicy(max_parallel_upgrades=1),
                              steps=PodStepOptions(pod_deletion=DrainOptions(timeout=30.0)), resync_seconds=300)
LABELLED = {**NFD_PCI, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.client": "true",
            **{f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}}


def _cluster(*nodes: FakeNode) -> FakeCluster:
    return FakeCluster({node.name: node for node in nodes})


#: The driver DaemonSet of the hand-built states: one node, its pod in place.
DRIVER_SET = {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "d", desired=1, app=DRIVER_DS)}


def _driver(revision: str = NEW, **facts: object) -> PodFacts:
    return PodFacts("driver-a", "gpu-0", DRIVER_DS, DRIVER_DS, revision, "d", **facts)  # type: ignore[arg-type]


def _one(state: str, *pods: PodFacts, unschedulable: bool = True, **fields: object) -> ClusterState:
    """gpu-0 at `state`, with its driver pod (a current, not Ready one unless given) and the driver DaemonSet."""
    node = NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: state}, {UPGRADE_ENABLED_ANNOTATION: "true"}, unschedulable)
    return ClusterState({"gpu-0": node}, pods or (_driver(),), DRIVER_SET, **fields)  # type: ignore[arg-type]


def test_a_node_with_only_nfds_pci_label_gets_the_deploy_labels_and_the_upgrade_annotation() -> None:
    cluster = _cluster(FakeNode("gpu-0", driver=None))
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert [p.node for p in plan.patches] == ["gpu-0"]
    patch = plan.patches[0]
    assert {k: v for k, v in patch.labels.items()} == {k: v for k, v in LABELLED.items() if k not in NFD_PCI}
    assert patch.annotations == {UPGRADE_ENABLED_ANNOTATION: "true"}
    cluster.carry_out(plan)
    assert reconcile(cluster.state(), SETTINGS, cluster.now).patches == ()  # a fixed point: no second write


def test_a_node_without_nvidia_pci_devices_is_left_alone() -> None:
    cluster = _cluster(FakeNode("cpu-0", labels={"kubernetes.io/os": "linux"}, driver=None))
    assert reconcile(cluster.state(), SETTINGS, cluster.now).patches == ()


def test_labelling_and_the_first_upgrade_step_share_one_patch() -> None:
    cluster = _cluster(FakeNode("gpu-0", labels=dict(LABELLED), driver=OLD))
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert len(plan.patches) == 1
    assert plan.patches[0].labels == {STATE_LABEL: "upgrade-required"}
    assert plan.patches[0].annotations == {UPGRADE_ENABLED_ANNOTATION: "true"}


def test_admission_records_the_schedulability_then_cordon_happens_in_the_next_round() -> None:
    cluster = _cluster(FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "upgrade-required"},
                                annotations={UPGRADE_ENABLED_ANNOTATION: "true"}))
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert plan.patches[0].labels == {STATE_LABEL: "cordon-required"}
    assert plan.patches[0].annotations == {}  # schedulable: NVIDIA writes no initial-state annotation
    assert plan.events[0].message.endswith("cordon-required") and plan.events[0].node == "gpu-0"
    cluster.carry_out(plan)
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert plan.patches[0].unschedulable is True and plan.patches[0].labels == {STATE_LABEL: "wait-for-jobs-required"}


def test_pod_deletion_evicts_first_and_records_the_next_state_only_after_the_pods_are_gone() -> None:
    node = FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "pod-deletion-required"}, unschedulable=True,
                    annotations={UPGRADE_ENABLED_ANNOTATION: "true", INITIAL_STATE_ANNOTATION: "false"}, gpu_pods=2)
    cluster = _cluster(node)
    state = cluster.state()
    assert nodes_needing_pods(state) == ["gpu-0"] and state.node_pods["gpu-0"] == NodePods(2, 0, 2)
    plan = reconcile(state, SETTINGS, cluster.now)
    assert plan.pod_actions == (PodAction("evict-gpu-pods", "gpu-0"),) and plan.patches == ()
    assert plan.requeue_after == POD_STEP_REQUEUE_SECONDS  # those pods are not watched: look again soon
    cluster.carry_out(plan)
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert plan.pod_actions == () and plan.patches[0].labels == {STATE_LABEL: "pod-restart-required"}


def test_an_eviction_refused_past_the_timeout_fails_the_node_with_the_reason() -> None:
    node = FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "pod-deletion-required"}, unschedulable=True,
                    annotations={UPGRADE_ENABLED_ANNOTATION: "true", INITIAL_STATE_ANNOTATION: "false"},
                    gpu_pods=1, pdb_blocks=True)
    cluster = _cluster(node)
    cluster.carry_out(reconcile(cluster.state(), SETTINGS, cluster.now))
    assert reconcile(cluster.state(), SETTINGS, cluster.now).patches == ()  # refused, still within the timeout
    cluster.tick(31)
    plan = reconcile(cluster.state(), SETTINGS, cluster.now)
    assert plan.patches[0].labels == {STATE_LABEL: "upgrade-failed"}
    assert "PodDisruptionBudget" in plan.patches[0].annotations[FAILURE_ANNOTATION]
    assert plan.events[0].warning and "PodDisruptionBudget" in plan.events[0].message


def test_a_pod_that_may_not_be_evicted_fails_the_node_at_once_with_the_pod_and_the_setting() -> None:
    reason = "default/scratch has emptyDir data (upgradePolicy.podDeletion: ... deleteEmptyDir ...)"
    state = _one("pod-deletion-required", node_pods={"gpu-0": NodePods(1, 0, 1)}, eviction_refusals={"gpu-0": reason})
    [patch] = reconcile(state, SETTINGS, 0).patches
    assert patch.labels == {STATE_LABEL: "upgrade-failed"} and patch.annotations[FAILURE_ANNOTATION] == reason


def test_the_old_driver_pod_is_deleted_once_and_a_terminating_one_is_waited_for() -> None:
    """upgrade_state_test.go "should not restart pod if it's up to date or already terminating" (common_manager.go
    ProcessPodRestartNodes): a terminating driver pod is still the node's; nothing is planned for it."""
    plan = reconcile(_one("pod-restart-required", _driver(OLD)), SETTINGS, 0)
    assert plan.pod_actions == (PodAction("delete", "gpu-0", "driver-a"),)
    terminating = reconcile(_one("pod-restart-required", _driver(OLD, terminating=True)), SETTINGS, 0)
    assert terminating.pod_actions == () and terminating.patches == ()


def test_an_unchanged_config_digest_takes_the_restart_only_path_at_admission() -> None:
    """Item 6. upgrade_inplace.go nextStateForUpgradeRequiredNode: a restart-only node is cordoned and goes from
    upgrade-required straight to pod-restart-required (gpu-operator's predicates.DriverPodRestartOnly: the
    running and desired DRIVER_CONFIG_DIGEST are equal); at cordon-required the full flow goes on."""
    same = ClusterState(
        {"gpu-0": NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "upgrade-required"}, {UPGRADE_ENABLED_ANNOTATION: "true"})},
        (PodFacts("driver-a", "gpu-0", DRIVER_DS, DRIVER_DS, OLD, "same"),),
        {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "same", desired=1, app=DRIVER_DS)},
    )
    [observation] = observe(same, SETTINGS, 0)
    assert observation.driver_pod_outdated and not observation.config_digest_changed
    [patch] = reconcile(same, SETTINGS, 0).patches
    assert patch.labels == {STATE_LABEL: "pod-restart-required"} and patch.unschedulable is True
    at_cordon = ClusterState({"gpu-0": NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "cordon-required"},
                                                 {UPGRADE_ENABLED_ANNOTATION: "true"})}, same.pods, same.daemonsets)
    assert reconcile(at_cordon, SETTINGS, 0).patches[0].labels == {STATE_LABEL: "wait-for-jobs-required"}


def test_a_state_another_tool_owns_is_left_alone() -> None:
    cluster = _cluster(FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "node-maintenance-required"},
                                annotations={UPGRADE_ENABLED_ANNOTATION: "true"}))
    assert observe(cluster.state(), SETTINGS, 0) == []
    assert reconcile(cluster.state(), SETTINGS, 0).patches == ()


def test_with_upgrades_off_the_state_labels_and_the_annotation_go() -> None:
    off = ControllerSettings("ns", SETTINGS.labelling, UpgradePolicy(auto_upgrade=False))
    cluster = _cluster(FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "upgrade-done"},
                                annotations={UPGRADE_ENABLED_ANNOTATION: "true"}))
    [patch] = reconcile(cluster.state(), off, 0).patches
    assert patch.labels == {STATE_LABEL: None} and patch.annotations == {UPGRADE_ENABLED_ANNOTATION: None}


def test_validation_requeues_at_its_deadline() -> None:
    now = 5_000.0
    cluster = _cluster(FakeNode("gpu-0", labels={**LABELLED, STATE_LABEL: "validation-required"},
                                annotations={UPGRADE_ENABLED_ANNOTATION: "true",
                                             "nvidia.com/gpu-driver-upgrade-validation-start-time": str(int(now))},
                                driver=NEW, digest="digest-new", validator_ready=False, validation_never=True))
    short = ControllerSettings("ns", SETTINGS.labelling, UpgradePolicy(validation_timeout_seconds=120))
    plan = reconcile(cluster.state(), short, now + 100)
    assert plan.patches == () and plan.requeue_after == 120 - 100 + 1.0
    assert reconcile(cluster.state(), SETTINGS, now + 100).requeue_after == SETTINGS.resync_seconds
    never = ControllerSettings("ns", SETTINGS.labelling, UpgradePolicy(validation_timeout_seconds=0))
    assert reconcile(cluster.state(), never, now + 100).requeue_after == SETTINGS.resync_seconds  # no deadline


# --- issue 20, items 11-15, through the controller's reconcile (k8s-operator-libs pkg/upgrade as vendored in
# gpu-operator v26.7.0, vendor/github.com/NVIDIA/k8s-operator-libs/pkg/upgrade/)

def _rollout(cluster: FakeCluster, settings: ControllerSettings, rounds: int = 80,
             stale_validators: bool = False) -> list[tuple[str, str, bool, bool]]:
    """Run rounds; returns (node, state written, driver Ready, uncordoned) for every state change."""
    seen = []
    for _ in range(rounds):
        plan = reconcile(cluster.state(), settings, cluster.now)
        cluster.carry_out(plan)
        for patch in plan.patches:
            node = cluster.nodes[patch.node]
            if STATE_LABEL in patch.labels or patch.unschedulable is False:
                seen.append((patch.node, patch.labels.get(STATE_LABEL) or "", node.driver_ready,
                             patch.unschedulable is False))
        cluster.tick(10)
        if stale_validators:  # KWOK keeps a validator Ready across the driver's restart
            for node in cluster.nodes.values():
                node.validator_ready = True
    return seen


def _labelled(name: str, **kwargs: object) -> FakeNode:
    return FakeNode(name, labels={**LABELLED, STATE_LABEL: "upgrade-done"},
                    annotations={UPGRADE_ENABLED_ANNOTATION: "true"}, **kwargs)  # type: ignore[arg-type]


def test_a_crash_looping_driver_fails_its_node_and_holds_further_admissions() -> None:
    """Items 11 and 12. common_manager.go isDriverPodFailing (a not-Ready container restarted more than 10 times)
    fails the node in ProcessPodRestartNodes; GetUpgradesInProgress counts it, so at maxParallelUpgrades 1
    ProcessUpgradeRequiredNodes admits no further node: the bad driver does not spread."""
    cluster = _cluster(_labelled("gpu-0", crash_loop=True), _labelled("gpu-1"), _labelled("gpu-2"))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"))
    _rollout(cluster, settings)
    states = {name: node.labels[STATE_LABEL] for name, node in cluster.nodes.items()}
    assert states == {"gpu-0": "upgrade-failed", "gpu-1": "upgrade-required", "gpu-2": "upgrade-required"}
    assert "restarted more than 10 times" in cluster.nodes["gpu-0"].annotations[FAILURE_ANNOTATION]
    assert cluster.nodes["gpu-1"].driver == OLD and not cluster.nodes["gpu-1"].unschedulable


def test_no_node_is_uncordoned_before_its_new_driver_pod_is_ready() -> None:
    """Item 12. common_manager.go ProcessPodRestartNodes -> isDriverPodInSync: validation-required (and so the
    uncordon) waits until the new driver pod is Running with every container Ready, even while a stale validator
    pod still reports Ready."""
    cluster = _cluster(_labelled("gpu-0", install_ticks=4), _labelled("gpu-1", install_ticks=2))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"))
    seen = _rollout(cluster, settings, stale_validators=True)
    late = [entry for entry in seen if entry[1] in ("validation-required", "uncordon-required", "upgrade-done")
            or entry[3]]
    assert late and all(driver_ready for _, _, driver_ready, _ in late), seen
    assert {node.labels[STATE_LABEL] for node in cluster.nodes.values()} == {"upgrade-done"}


def test_with_drain_enabled_a_node_whose_gpu_pods_were_deleted_is_not_drained() -> None:
    """Item 13. pod_manager.go SchedulePodEviction goes to pod-restart-required once the GPU pods are deleted;
    drain-required follows only a failed deletion (updateNodeToDrainOrFailed)."""
    cluster = _cluster(_labelled("gpu-0", gpu_pods=2))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=1, drain=True),
                                  steps=PodStepOptions(pod_deletion=DrainOptions(timeout=30.0)))
    seen = _rollout(cluster, settings)
    assert "drain-required" not in [state for _, state, _, _ in seen]
    assert [a.kind for a in cluster.nodes["gpu-0"].pod_actions] == ["evict-gpu-pods", "delete"]
    assert cluster.nodes["gpu-0"].labels[STATE_LABEL] == "upgrade-done"


def test_with_drain_enabled_a_refused_deletion_falls_back_to_the_drain() -> None:
    """Item 15 (deletion failure with drain enabled falls back to drain). pod_manager.go
    updateNodeToDrainOrFailed; the drain then gets its own timeout (drain_manager.go ScheduleNodesDrain)."""
    cluster = _cluster(_labelled("gpu-0", gpu_pods=1, pdb_blocks=True))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=1, drain=True),
                                  steps=PodStepOptions(pod_deletion=DrainOptions(timeout=30.0),
                                                       drain=DrainOptions(timeout=60.0)))
    seen = _rollout(cluster, settings)
    states = [state for _, state, _, _ in seen]
    assert states[-3:] == ["pod-deletion-required", "drain-required", "upgrade-failed"], states
    assert [a.kind for a in cluster.nodes["gpu-0"].pod_actions].count("drain") >= 5  # 60 s of drain, 10 s a round


def test_a_timeout_of_0_waits_for_the_disruption_budget_forever() -> None:
    """Item 15. kubectl's drain helper (used by pod_manager.go SchedulePodEviction and drain_manager.go
    ScheduleNodesDrain with Timeout = timeoutSeconds) treats 0 as no timeout."""
    state = _one("pod-deletion-required", node_pods={"gpu-0": NodePods(1, 0, 1)}, eviction_blocked_since={"gpu-0": 0.0})
    forever = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS), UpgradePolicy(),
                                 steps=PodStepOptions(pod_deletion=DrainOptions(timeout=0.0)))
    plan = reconcile(state, forever, 1_000_000.0)
    assert plan.pod_actions == (PodAction("evict-gpu-pods", "gpu-0"),) and plan.patches == ()


def test_notready_nodes_hold_admissions_at_max_unavailable() -> None:
    """Item 15. common_manager.go GetCurrentUnavailableNodes counts a node whose Ready condition is not True."""
    down = _labelled("gpu-0", driver=NEW, digest="digest-new", ready=False)
    cluster = _cluster(down, _labelled("gpu-1"), _labelled("gpu-2"))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=0, max_unavailable=2))
    for _ in range(2):
        cluster.carry_out(reconcile(cluster.state(), settings, cluster.now))
    states = {name: node.labels[STATE_LABEL] for name, node in cluster.nodes.items()}
    assert states == {"gpu-0": "upgrade-done", "gpu-1": "cordon-required", "gpu-2": "upgrade-required"}


# --- issue 27, items 2, 5, 7 and 11 through the controller's reconcile

def _required(name: str, **kwargs: object) -> FakeNode:
    return FakeNode(name, labels={**LABELLED, STATE_LABEL: "upgrade-required"},
                    annotations={UPGRADE_ENABLED_ANNOTATION: "true"}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("driver_label", ["false", "pre-installed"])
def test_a_node_whose_driver_pod_goes_for_good_is_released_and_frees_its_slot(driver_label: str) -> None:
    """Item 2. upgrade_state.go BuildState manages only nodes with a driver pod. gpu-0 waits at
    pod-restart-required for a new driver that crash-loops; its driver deploy label then turns `false` (or
    `pre-installed`, the driver manager's value for a host driver): the DaemonSet deletes the pod and recreates
    none. The node leaves the upgrade uncordoned (it was schedulable before), and gpu-1 gets the slot."""
    cluster = _cluster(_labelled("gpu-0", crash_loop=True, install_ticks=50), _labelled("gpu-1"))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS),
                                  UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"))
    for _ in range(12):
        cluster.carry_out(reconcile(cluster.state(), settings, cluster.now))
        cluster.tick()
    gpu0 = cluster.nodes["gpu-0"]
    assert gpu0.labels[STATE_LABEL] == "pod-restart-required" and gpu0.unschedulable
    gpu0.labels[DRIVER_LABEL] = driver_label
    seen = _rollout(cluster, settings, rounds=40)
    assert (STATE_LABEL not in gpu0.labels) and not gpu0.unschedulable and gpu0.driver is None, seen
    assert not any(key.startswith("nvidia.com/gpu-driver-upgrade") and key != UPGRADE_ENABLED_ANNOTATION
                   for key in gpu0.annotations)
    assert cluster.nodes["gpu-1"].labels[STATE_LABEL] == "upgrade-done" and cluster.nodes["gpu-1"].driver == NEW


def test_a_node_cordoned_before_keeps_its_cordon_when_it_leaves_the_upgrade() -> None:
    """Item 2. The release undoes only the upgrade's cordon: the initial-state annotation (common_manager.go
    ProcessDoneOrUnknownNodes) says the node was cordoned before, so it stays cordoned and loses the record."""
    node = _labelled("gpu-0", unschedulable=True)
    node.labels.update({STATE_LABEL: "pod-restart-required", DRIVER_LABEL: "false"})
    node.annotations[INITIAL_STATE_ANNOTATION] = "true"
    cluster = _cluster(node)
    cluster.tick()  # the DaemonSet deletes the pod of a node it no longer selects
    [patch] = reconcile(cluster.state(), SETTINGS, cluster.now).patches
    assert patch.unschedulable is None and patch.labels == {STATE_LABEL: None}
    assert patch.annotations == {INITIAL_STATE_ANNOTATION: None}


def test_no_upgrade_step_while_the_driver_daemonset_has_unscheduled_pods() -> None:
    """Item 7. upgrade_state.go BuildState fails while a driver DaemonSet's desiredNumberScheduled differs from its
    pods ("driver DaemonSet should not have Unscheduled pods"): the round takes no upgrade step, so a node whose
    old driver pod is gone and whose new one is not created yet is not mistaken for one without a driver.
    Labelling goes on meanwhile."""
    node = _labelled("gpu-0", gap_ticks=2)
    node.labels[STATE_LABEL] = "pod-restart-required"
    node.unschedulable = True
    cluster = _cluster(node)
    cluster.carry_out(reconcile(cluster.state(), SETTINGS, cluster.now))  # deletes the old driver pod
    assert [a.kind for a in node.pod_actions] == ["delete"]
    cluster.tick()  # the old pod is gone; the new one comes two ticks later
    cluster.nodes["gpu-1"] = FakeNode("gpu-1", driver=None)  # a node with only NFD's label joins
    state = cluster.state()
    assert unscheduled_driver_daemonsets(state, SETTINGS) == (DRIVER_DS,)
    plan = reconcile(state, SETTINGS, cluster.now)
    assert plan.paused_by == (DRIVER_DS,) and plan.requeue_after == UNSCHEDULED_REQUEUE_SECONDS
    assert [p.node for p in plan.patches] == ["gpu-1"] and STATE_LABEL not in plan.patches[0].labels
    cluster.carry_out(plan)
    for _ in range(3):
        cluster.tick()
        cluster.carry_out(reconcile(cluster.state(), SETTINGS, cluster.now))
    assert node.labels[STATE_LABEL] in ("pod-restart-required", "validation-required") and node.unschedulable


def test_a_node_whose_driver_pod_waits_for_the_scheduler_sits_the_round_out() -> None:
    """Item 2. upgrade_state.go BuildState skips a driver pod without a nodeName ("Driver Pod has no NodeName,
    skipping"): its node (named by the DaemonSet's node affinity) is neither stepped nor released."""
    unbound = PodFacts("driver-a", "", DRIVER_DS, DRIVER_DS, NEW, "d", target_node="gpu-0")
    state = _one("pod-restart-required", unbound)
    assert observe(state, SETTINGS, 0) == [] and reconcile(state, SETTINGS, 0).patches == ()


def test_a_driver_pod_waiting_for_the_scheduler_pauses_admissions() -> None:
    """Found by the controller chaos e2e (6 nodes in progress at maxParallelUpgrades 5): the node whose new driver
    pod is not bound yet sits the round out and is counted nowhere, so admitting another node then would exceed
    the limit. BuildState's "Unscheduled pods" rule, read with an unbound pod as unscheduled, pauses the round."""
    unbound = PodFacts("driver-a", "", DRIVER_DS, DRIVER_DS, NEW, "d", target_node="gpu-0")
    waiting = PodFacts("driver-b", "gpu-1", DRIVER_DS, DRIVER_DS, OLD, "d", running_ready=True)
    nodes = {"gpu-0": NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "pod-restart-required"},
                                {UPGRADE_ENABLED_ANNOTATION: "true"}, True),
             "gpu-1": NodeFacts("gpu-1", {**LABELLED, STATE_LABEL: "upgrade-required"},
                                {UPGRADE_ENABLED_ANNOTATION: "true"}, False)}
    daemonsets = {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "d", desired=2, app=DRIVER_DS)}
    plan = reconcile(ClusterState(nodes, (unbound, waiting), daemonsets), SETTINGS, 0)
    assert plan.paused_by == (DRIVER_DS,)
    assert not [p for p in plan.patches if p.labels.get(STATE_LABEL)]  # gpu-1 is not admitted


def test_a_driver_pod_of_another_daemonset_is_not_the_upgrades() -> None:
    """Item 7. common_manager.go GetPodsOwnedbyDs: a pod owned by a DaemonSet that is not a driver's (found by
    the driver label) is not in BuildState's nodes; a pod with no owner at all is (GetOrphanedPods)."""
    other = {**DRIVER_SET, "nvidia-driver-daemonset-old": DaemonSetFacts("nvidia-driver-daemonset-old", app="x")}
    foreign = PodFacts("driver-a", "gpu-0", DRIVER_DS, "nvidia-driver-daemonset-old", OLD, "d")
    state = _one("pod-restart-required", foreign)
    assert observe(ClusterState(state.nodes, state.pods, other), SETTINGS, 0) == []
    idle = {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "d", desired=0, app=DRIVER_DS)}  # wants no node yet
    orphan = ClusterState(state.nodes, (PodFacts("driver-a", "gpu-0", DRIVER_DS, "", "", "", orphaned=True),), idle)
    [observation] = observe(orphan, SETTINGS, 0)
    assert observation.driver_pod_orphaned and not observation.driver_pod_outdated
    assert reconcile(orphan, SETTINGS, 0).pod_actions == (PodAction("delete", "gpu-0", "driver-a"),)


def test_the_upgrade_requested_and_safe_load_annotations_are_read_from_the_node() -> None:
    """Item 7. common_manager.go IsUpgradeRequested (`true` only) and safe_driver_load_manager.go
    IsWaitingForSafeDriverLoad (any non-empty value), from the node's annotations."""
    def observed(annotations: dict[str, str]) -> tuple[bool, bool]:
        node = NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "upgrade-done"}, annotations)
        [o] = observe(ClusterState({"gpu-0": node}, (_driver(),), DRIVER_SET), SETTINGS, 0)
        return o.upgrade_requested, o.safe_load_waiting

    assert observed({UPGRADE_REQUESTED_ANNOTATION: "true", SAFE_LOAD_ANNOTATION: "true"}) == (True, True)
    assert observed({UPGRADE_REQUESTED_ANNOTATION: "yes", SAFE_LOAD_ANNOTATION: ""}) == (False, False)


def test_validation_without_a_validator_pod_waits_and_a_node_cordoned_before_ends_done() -> None:
    """Item 5. validation_manager.go Validate (no validation pod: no timeout) through the reconcile: a node whose
    validator DaemonSet does not run there waits at validation-required, cordoned, without a start time; with
    its validator Ready, a node cordoned before the upgrade goes to upgrade-done in one step
    (updateNodeToUncordonOrDoneState)."""
    node = _labelled("gpu-0", driver=NEW, digest="digest-new", validator=False, unschedulable=True)
    node.labels[STATE_LABEL] = "validation-required"
    cluster = _cluster(node)
    short = ControllerSettings("gpu-operator", SETTINGS.labelling, UpgradePolicy(validation_timeout_seconds=60))
    for _ in range(20):
        cluster.carry_out(reconcile(cluster.state(), short, cluster.now))
        cluster.tick()
    assert node.labels[STATE_LABEL] == "validation-required" and VALIDATION_START_ANNOTATION not in node.annotations
    node.validator, node.annotations[INITIAL_STATE_ANNOTATION] = True, "true"
    [patch] = reconcile(cluster.state(), short, cluster.now).patches
    assert patch.labels == {STATE_LABEL: "upgrade-done"} and patch.annotations == {INITIAL_STATE_ANNOTATION: None}
    assert patch.unschedulable is None


def test_the_dra_plugins_label_waits_for_the_gpu_claims_to_go() -> None:
    """Item 11. nodelabeling_controller.go updateGPUStateLabels defers removing `nvidia.com/gpu.deploy.dra-driver`
    while nodeHasDRAClaimPods, and Reconcile requeues after 30 s; the loop learns which nodes to ask about from
    nodes_needing_claims."""
    labels = {**LABELLED, "nvidia.com/gpu.deploy.dra-driver": "true"}
    node = NodeFacts("gpu-0", labels, {UPGRADE_ENABLED_ANNOTATION: "true"})
    state = ClusterState({"gpu-0": node, "gpu-1": NodeFacts("gpu-1", LABELLED, {UPGRADE_ENABLED_ANNOTATION: "true"})})
    assert nodes_needing_claims(state, SETTINGS) == ["gpu-0"]
    held = ClusterState(state.nodes, gpu_claim_nodes=frozenset({"gpu-0"}))
    plan = reconcile(held, SETTINGS, 0)
    assert plan.patches == () and plan.requeue_after == CLAIMS_REQUEUE_SECONDS
    [patch] = reconcile(state, SETTINGS, 0).patches
    assert patch.labels == {"nvidia.com/gpu.deploy.dra-driver": None}
    assert reconcile(state, SETTINGS, 0).requeue_after == SETTINGS.resync_seconds


def test_the_census_counts_the_managed_nodes_only() -> None:
    """Item 2. The gpu_operator_nodes_upgrades_* gauges come from NVIDIA's GetUpgradesInProgress, GetUpgradesDone
    and GetUpgradesPending over BuildState's nodes: a node without a driver pod is in none of them."""
    from gpu_operator.agents.controller.status import census

    gone = NodeFacts("gpu-1", {**LABELLED, STATE_LABEL: "upgrade-done"}, {UPGRADE_ENABLED_ANNOTATION: "true"})
    here = NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "upgrade-done"}, {UPGRADE_ENABLED_ANNOTATION: "true"})
    state = ClusterState({"gpu-0": here, "gpu-1": gone}, (_driver(),), DRIVER_SET)
    summary = census(state, reconcile(state, SETTINGS, 0).observations, 1, {})
    assert (summary.gpu_nodes, summary.done) == (2, 1)


def test_a_node_the_remediation_holds_is_not_admitted_to_an_upgrade() -> None:
    """Issue 26: never start an upgrade on a quarantined node, by its remediation label or because the remediation
    takes it in this very round (the loop plans the remediation first and passes the nodes it holds)."""
    from gpu_operator.remediation.vocabulary import STATE_LABEL as REMEDIATION_STATE

    waiting = _one("upgrade-required", _driver(OLD, running_ready=True), unschedulable=False)
    admitted = [p for p in reconcile(waiting, SETTINGS, 0).patches if p.labels.get(STATE_LABEL)]
    assert admitted, "the unheld node is admitted: the two cases below test the hold alone"
    held_now = ClusterState(waiting.nodes, waiting.pods, waiting.daemonsets, remediation_holds=frozenset({"gpu-0"}))
    assert not [p for p in reconcile(held_now, SETTINGS, 0).patches if p.labels.get(STATE_LABEL)]
    node = waiting.nodes["gpu-0"]
    labelled = NodeFacts("gpu-0", {**node.labels, REMEDIATION_STATE: "quarantined"}, node.annotations, False)
    held = ClusterState({"gpu-0": labelled}, waiting.pods, waiting.daemonsets)
    assert not [p for p in reconcile(held, SETTINGS, 0).patches if p.labels.get(STATE_LABEL)]


# --- issue 28 item 4: several driver DaemonSets, each group within its own upgrade policy ---------------------------

def test_each_driver_group_is_upgraded_within_its_own_policy() -> None:
    """A driver of its own (NVIDIADriver's DaemonSet `nvidia-gpu-driver-<os>-<hash>`, its own `app`) is upgraded
    beside the cluster driver: one at a time for the cluster's (maxParallelUpgrades 1), two at a time for t4's
    (maxParallelUpgrades 2); a DaemonSet short of pods holds its own group only."""
    from gpu_operator.agents.controller.settings import DriverGroupSettings

    t4_ds = "nvidia-gpu-driver-ubuntu22.04-54bf6fb65b"
    cluster_ds = f"{DRIVER_DS}-ubuntu22.04"
    group = DriverGroupSettings("t4", (t4_ds,), UpgradePolicy(max_parallel_upgrades=2, max_unavailable="100%"))
    settings = ControllerSettings("gpu-operator", LabellingPolicy(),
                                  UpgradePolicy(max_parallel_upgrades=1, max_unavailable="100%"),
                                  steps=PodStepOptions(pod_deletion=DrainOptions(timeout=30.0)), driver_groups=(group,))
    members = {"a": cluster_ds, "b": cluster_ds, "c": t4_ds, "d": t4_ds}
    nodes = {name: NodeFacts(name, {**LABELLED, STATE_LABEL: "upgrade-required"}, {UPGRADE_ENABLED_ANNOTATION: "true"})
             for name in members}
    pods = tuple(PodFacts(f"driver-{name}", name, DRIVER_DS if ds == cluster_ds else ds, ds, OLD, "d", ready=True,
                          running_ready=True) for name, ds in members.items())

    def admitted(t4_desired: int) -> list[str]:
        daemonsets = {cluster_ds: DaemonSetFacts(cluster_ds, NEW, "d", desired=2, app=DRIVER_DS),
                      t4_ds: DaemonSetFacts(t4_ds, NEW, "d", desired=t4_desired, app=t4_ds)}
        plan = reconcile(ClusterState(nodes, pods, daemonsets), settings, 0.0)
        admitting = ("cordon-required", "pod-restart-required")
        return sorted(p.node for p in plan.patches if p.labels.get(STATE_LABEL) in admitting)

    assert admitted(2) == ["a", "c", "d"]
    assert admitted(3) == ["a"]  # t4's DaemonSet is creating a pod: its group sits the round out


def test_a_driver_groups_pod_steps_follow_its_own_upgrade_policy() -> None:
    """Issue 28 item 4: NVIDIADriver's spec carries the whole upgradePolicy, so a group's podDeletion timeout is
    the one its nodes fail by, and its pod actions name the group (the loop runs them with its options)."""
    from gpu_operator.agents.controller.settings import DriverGroupSettings

    t4_ds = "nvidia-gpu-driver-ubuntu22.04-54bf6fb65b"
    group = DriverGroupSettings("t4", (t4_ds,), UpgradePolicy(max_parallel_upgrades=1),
                                PodStepOptions(pod_deletion=DrainOptions(timeout=120.0)))
    settings = dataclasses.replace(SETTINGS, driver_groups=(group,))  # the cluster driver's: 30 s
    nodes = {name: NodeFacts(name, {**LABELLED, STATE_LABEL: "pod-deletion-required"},
                             {UPGRADE_ENABLED_ANNOTATION: "true", INITIAL_STATE_ANNOTATION: "false"}, True)
             for name in ("a", "t")}
    pods = (PodFacts("driver-a", "a", DRIVER_DS, DRIVER_DS, OLD, "d"), PodFacts("driver-t", "t", t4_ds, t4_ds, OLD, "d"))
    daemonsets = {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "d", desired=1, app=DRIVER_DS),
                  t4_ds: DaemonSetFacts(t4_ds, NEW, "d", desired=1, app=t4_ds)}
    state = ClusterState(nodes, pods, daemonsets, {"a": NodePods(1, 0, 1), "t": NodePods(1, 0, 1)},
                         eviction_blocked_since={"a": 0.0, "t": 0.0},
                         eviction_waiting_for={"a": "a PodDisruptionBudget refused", "t": "a PodDisruptionBudget refused"})
    plan = reconcile(state, settings, 60.0)  # past the cluster driver's 30 s, within t4's 120 s
    failed = sorted(p.node for p in plan.patches if p.labels.get(STATE_LABEL) == "upgrade-failed")
    assert failed == ["a"]
    assert {(a.node, a.group) for a in plan.pod_actions} == {("t", "t4")}
    assert "t" in node_groups(state, settings) and node_groups(state, settings)["t"] == "t4"
