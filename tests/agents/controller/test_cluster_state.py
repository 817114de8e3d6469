"""The facts the controller reads from lightkube objects: driver pod readiness and restarts, node readiness."""

from __future__ import annotations

from lightkube.models.core_v1 import (
    Container,
    ContainerStatus,
    NodeCondition,
    NodeStatus,
    PodSpec,
    PodStatus,
)
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node, Pod

from gpu_operator.agents.controller.cluster_state import node_facts, pod_facts


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
