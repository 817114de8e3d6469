"""The facts the controller reads from lightkube objects: driver pods, DaemonSets, nodes, GPU claim holders."""

from __future__ import annotations

from lightkube.models.apps_v1 import DaemonSetSpec, DaemonSetStatus
from lightkube.models.core_v1 import (
    Affinity,
    Container,
    ContainerStatus,
    NodeAffinity,
    NodeCondition,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeStatus,
    PodResourceClaim,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
)
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta, OwnerReference
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Node, Pod

from gpu_operator.agents.controller.cluster_state import daemonset_facts, gpu_claim_holders, node_facts, pod_facts
from gpu_operator.upgrade.observation import DRIVER_RESTART_LIMIT


def _driver(phase: str, *statuses: tuple[bool, int], init: tuple[bool, int] | None = None) -> Pod:
    def status(name: str, ready: bool, restarts: int) -> ContainerStatus:
        return ContainerStatus(name=name, image="i", imageID="", ready=ready, restartCount=restarts)

    return Pod(metadata=ObjectMeta(name="nvidia-driver-daemonset-x", namespace="gpu-operator"),
               spec=PodSpec(nodeName="gpu-0", containers=[Container(name="nvidia-driver-ctr")]),
               status=PodStatus(phase=phase,
                                containerStatuses=[status(f"c{i}", *s) for i, s in enumerate(statuses)] or None,
                                initContainerStatuses=[status("k8s-driver-manager", *init)] if init else None))


def test_a_driver_pod_is_ready_when_running_with_every_container_ready() -> None:
    """Item 12. common_manager.go isDriverPodInSync: phase Running, at least one container status, all Ready."""
    assert pod_facts(_driver("Running", (True, 0), (True, 2))).running_ready
    assert not pod_facts(_driver("Running", (True, 0), (False, 0))).running_ready
    assert not pod_facts(_driver("Running")).running_ready  # no container status yet
    assert not pod_facts(_driver("Pending", (True, 0))).running_ready


def test_restarts_count_only_containers_that_are_not_ready() -> None:
    """Item 12. common_manager.go isDriverPodFailing: a not-Ready init container or container with restarts."""
    assert pod_facts(_driver("Running", (False, 11), (True, 40))).restarts == 11
    assert pod_facts(_driver("Pending", init=(False, 12))).restarts == 12
    assert pod_facts(_driver("Running", (True, 40))).restarts == 0


def test_a_node_is_ready_unless_its_ready_condition_says_otherwise() -> None:
    """Item 15. common_manager.go isNodeConditionReady: only a Ready condition other than True makes it NotReady."""
    def node(*conditions: tuple[str, str]) -> Node:
        return Node(metadata=ObjectMeta(name="gpu-0"),
                    status=NodeStatus(conditions=[NodeCondition(type=t, status=s) for t, s in conditions]))

    assert node_facts(node(("Ready", "True"))).ready and node_facts(Node(metadata=ObjectMeta(name="n"))).ready
    assert not node_facts(node(("Ready", "Unknown"))).ready and not node_facts(node(("Ready", "False"))).ready
    assert node_facts(node(("MemoryPressure", "True"))).ready


def test_the_four_pods_of_nvidias_repeated_restarts_test() -> None:
    """upgrade_state_test.go "should move pod to UpgradeFailed state if it's in PodRestart and driver pod is
    failing with repeated restarts": pods 1 and 2 (no repeated restarts) are not failing, pod 3 (main container
    11 restarts) and pod 4 (init container 11 restarts) are (common_manager.go isDriverPodFailing)."""
    pods = [_driver("Running", (False, 0)), _driver("Running", (False, 0), init=(True, 0)),
            _driver("Running", (False, 11), init=(True, 0)), _driver("Running", (False, 0), init=(False, 11))]
    assert [pod_facts(pod).restarts > DRIVER_RESTART_LIMIT for pod in pods] == [False, False, True, True]


def test_an_ownerless_driver_pod_is_orphaned_and_an_unbound_one_names_its_node() -> None:
    """Items 2 and 7. common_manager.go IsOrphanedPod (no ownerReferences at all); upgrade_state.go BuildState
    skips a pod with no nodeName, whose node the DaemonSet controller's node affinity names."""
    orphan = _driver("Running", (True, 0))
    assert pod_facts(orphan).orphaned and pod_facts(orphan).target_node == "gpu-0"
    owner = OwnerReference(apiVersion="apps/v1", kind="DaemonSet", name="nvidia-driver-daemonset", uid="u")
    term = NodeSelectorTerm(matchFields=[NodeSelectorRequirement(key="metadata.name", operator="In",
                                                                 values=["gpu-7"])])
    pending = Pod(metadata=ObjectMeta(name="d", namespace="gpu-operator", ownerReferences=[owner]),
                  spec=PodSpec(containers=[Container(name="c")], affinity=Affinity(nodeAffinity=NodeAffinity(
                      requiredDuringSchedulingIgnoredDuringExecution=NodeSelector(nodeSelectorTerms=[term])))),
                  status=PodStatus(phase="Pending"))
    facts = pod_facts(pending)
    assert not facts.orphaned and facts.owner == "nvidia-driver-daemonset"
    assert facts.node == "" and facts.target_node == "gpu-7"


def test_a_daemonset_is_known_by_its_own_app_label() -> None:
    """Item 7. common_manager.go GetDriverDaemonSets lists the DaemonSets by the driver label on the DaemonSet;
    BuildState compares status.desiredNumberScheduled with the pods it owns."""
    ds = DaemonSet(metadata=ObjectMeta(name="nvidia-driver-daemonset", labels={"app": "nvidia-driver-daemonset"}),
                   spec=DaemonSetSpec(selector=LabelSelector(), template=PodTemplateSpec(spec=PodSpec(containers=[
                       Container(name="c")]))),
                   status=DaemonSetStatus(currentNumberScheduled=3, desiredNumberScheduled=3, numberMisscheduled=0,
                                          numberReady=2))
    facts = daemonset_facts(ds, "rev")
    assert (facts.app, facts.desired, facts.ready) == ("nvidia-driver-daemonset", 3, 2)


def _claim_pod(name: str, node: str, claim: str, phase: str = "Running", deleting: bool = False) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ml", deletionTimestamp="2026-01-01T00:00:00Z"
                                   if deleting else None),
               spec=PodSpec(nodeName=node, containers=[Container(name="c")],
                            resourceClaims=[PodResourceClaim(name="gpu", resourceClaimName=claim)]),
               status=PodStatus(phase=phase))


def _claim(driver: str, admin: bool = False) -> dict[str, object]:
    return {"status": {"allocation": {"devices": {"results": [
        {"driver": driver, "device": "gpu-0", "pool": "p", "request": "r", "adminAccess": admin}]}}}}


def test_gpu_claim_holders_follow_nvidias_node_has_dra_claim_pods() -> None:
    """Item 11. nodelabeling_controller.go nodeHasDRAClaimPods with PodHasNVIDIAGPUClaim(includeAdminAccess=true):
    a running or terminating pod holding a claim allocated by gpu.nvidia.com counts (admin access too), one whose
    claim could not be read counts, a finished pod without a deletion timestamp does not, nor another driver's."""
    claims = {("ml", "train"): _claim("gpu.nvidia.com"), ("ml", "watch"): _claim("gpu.nvidia.com", admin=True),
              ("ml", "nic"): _claim("rdma.example.com")}
    pods = [_claim_pod("a", "n-run", "train"), _claim_pod("b", "n-admin", "watch"),
            _claim_pod("c", "n-done", "train", phase="Succeeded"),
            _claim_pod("d", "n-stopping", "train", phase="Succeeded", deleting=True),
            _claim_pod("e", "n-unreadable", "lost"), _claim_pod("f", "n-nic", "nic")]
    assert gpu_claim_holders(pods, claims) == {"n-run", "n-admin", "n-stopping", "n-unreadable"}
