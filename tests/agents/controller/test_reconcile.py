"""The controller's reconcile: labelling and upgrade steps merged into one patch per node, pod actions first."""

from __future__ import annotations

from gpu_operator.agents.controller.cluster_state import ClusterState, DaemonSetFacts, NodeFacts, NodePods, PodFacts
from gpu_operator.agents.controller.reconcile import (
    POD_STEP_REQUEUE_SECONDS,
    UPGRADE_ENABLED_ANNOTATION,
    PodAction,
    nodes_needing_pods,
    observe,
    reconcile,
)
from gpu_operator.agents.controller.settings import ControllerSettings
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.labels import WORKLOAD_OPERANDS, LabellingPolicy
from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
from gpu_operator.upgrade.state_machine import FAILURE_ANNOTATION, INITIAL_STATE_ANNOTATION
from tests.agents.controller.fake_cluster import DRIVER_DS, NEW, NFD_PCI, OLD, FakeCluster, FakeNode

OPERANDS = frozenset(WORKLOAD_OPERANDS["container"])  # NVIDIA's whole container set
SETTINGS = ControllerSettings("gpu-operator", LabellingPolicy(), UpgradePolicy(max_parallel_upgrades=1),
                              pod_deletion=DrainOptions(timeout=30.0), resync_seconds=300)
LABELLED = {**NFD_PCI, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.client": "true",
            **{f"nvidia.com/gpu.deploy.{o}": "true" for o in OPERANDS}}


def _cluster(*nodes: FakeNode) -> FakeCluster:
    return FakeCluster({node.name: node for node in nodes})


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
    labels = {**LABELLED, STATE_LABEL: "pod-deletion-required"}
    reason = "default/scratch has emptyDir data (upgradePolicy.podDeletion: ... deleteEmptyDir ...)"
    state = ClusterState({"gpu-0": NodeFacts("gpu-0", labels, {UPGRADE_ENABLED_ANNOTATION: "true"}, True)},
                         node_pods={"gpu-0": NodePods(1, 0, 1)}, eviction_refusals={"gpu-0": reason})
    [patch] = reconcile(state, SETTINGS, 0).patches
    assert patch.labels == {STATE_LABEL: "upgrade-failed"} and patch.annotations[FAILURE_ANNOTATION] == reason


def test_the_old_driver_pod_is_deleted_once_and_a_terminating_one_counts_as_gone() -> None:
    labels = {**LABELLED, STATE_LABEL: "pod-restart-required"}
    state = ClusterState(
        {"gpu-0": NodeFacts("gpu-0", labels, {UPGRADE_ENABLED_ANNOTATION: "true"}, True)},
        (PodFacts("driver-a", "gpu-0", DRIVER_DS, DRIVER_DS, OLD, "d"),),
        {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "d")},
    )
    plan = reconcile(state, SETTINGS, 0)
    assert plan.pod_actions == (PodAction("delete", "gpu-0", "driver-a"),)
    terminating = ClusterState(state.nodes, (PodFacts("driver-a", "gpu-0", DRIVER_DS, DRIVER_DS, OLD, "d",
                                                      terminating=True),), state.daemonsets)
    assert reconcile(terminating, SETTINGS, 0).pod_actions == ()


def test_an_unchanged_config_digest_takes_the_restart_only_path() -> None:
    state = ClusterState(
        {"gpu-0": NodeFacts("gpu-0", {**LABELLED, STATE_LABEL: "cordon-required"}, {UPGRADE_ENABLED_ANNOTATION: "true"})},
        (PodFacts("driver-a", "gpu-0", DRIVER_DS, DRIVER_DS, OLD, "same"),),
        {DRIVER_DS: DaemonSetFacts(DRIVER_DS, NEW, "same")},
    )
    [observation] = observe(state, SETTINGS, 0)
    assert observation.driver_pod_outdated and not observation.config_digest_changed
    assert reconcile(state, SETTINGS, 0).patches[0].labels == {STATE_LABEL: "pod-restart-required"}


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
                                  UpgradePolicy(max_parallel_upgrades=1, drain=True), pod_deletion=DrainOptions(timeout=30.0))
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
                                  pod_deletion=DrainOptions(timeout=30.0), drain=DrainOptions(timeout=60.0))
    seen = _rollout(cluster, settings)
    states = [state for _, state, _, _ in seen]
    assert states[-3:] == ["pod-deletion-required", "drain-required", "upgrade-failed"], states
    assert [a.kind for a in cluster.nodes["gpu-0"].pod_actions].count("drain") >= 5  # 60 s of drain, 10 s a round


def test_a_timeout_of_0_waits_for_the_disruption_budget_forever() -> None:
    """Item 15. kubectl's drain helper (used by pod_manager.go SchedulePodEviction and drain_manager.go
    ScheduleNodesDrain with Timeout = timeoutSeconds) treats 0 as no timeout."""
    labels = {**LABELLED, STATE_LABEL: "pod-deletion-required"}
    state = ClusterState({"gpu-0": NodeFacts("gpu-0", labels, {UPGRADE_ENABLED_ANNOTATION: "true"}, True)},
                         node_pods={"gpu-0": NodePods(1, 0, 1)}, eviction_blocked_since={"gpu-0": 0.0})
    forever = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS), UpgradePolicy(),
                                 pod_deletion=DrainOptions(timeout=0.0))
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
