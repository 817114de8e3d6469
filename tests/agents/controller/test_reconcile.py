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
from gpu_operator.labels import LabellingPolicy
from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
from gpu_operator.upgrade.state_machine import FAILURE_ANNOTATION, INITIAL_STATE_ANNOTATION
from tests.agents.controller.fake_cluster import DRIVER_DS, NEW, NFD_PCI, OLD, FakeCluster, FakeNode

OPERANDS = frozenset({"driver", "container-toolkit", "device-plugin", "operator-validator"})
SETTINGS = ControllerSettings("gpu-operator", LabellingPolicy(OPERANDS), UpgradePolicy(max_parallel_upgrades=1),
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
    assert plan.patches[0].annotations == {INITIAL_STATE_ANNOTATION: "false"}
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
