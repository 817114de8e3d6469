"""The controller's evictions: the driver manager's pod rules, refusals before any eviction, PDB refusals timed."""

from __future__ import annotations

from typing import Any

from lightkube.models.core_v1 import Container, PodSpec, PodStatus, ResourceRequirements, Volume
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.core_v1 import Pod

from gpu_operator.agents.controller.actuator import Actuator, node_pods
from gpu_operator.agents.controller.reconcile import PodAction
from gpu_operator.agents.driver_manager.kube import pod_facts
from gpu_operator.agents.driver_manager.settings import DrainOptions
from gpu_operator.agents.label_selector import parse_selector
from tests.agents.driver_manager.test_kube import api_error

OWNER = [OwnerReference(apiVersion="apps/v1", kind="ReplicaSet", name="rs", uid="u", controller=True)]


def _pod(name: str, *, gpu: bool = True, owned: bool = True, empty_dir: bool = False,
         labels: dict[str, str] | None = None) -> Pod:
    limits = {"nvidia.com/gpu": "1"} if gpu else {}
    return Pod(metadata=ObjectMeta(name=name, namespace="ml", labels=labels or {},
                                   ownerReferences=OWNER if owned else None),
               spec=PodSpec(nodeName="gpu-0", containers=[Container(name="c", resources=ResourceRequirements(
                   limits=limits))], volumes=[Volume(name="scratch", emptyDir={})] if empty_dir else None),
               status=PodStatus(phase="Running"))


class FakeClient:
    def __init__(self, pods: list[Pod], refuse: set[str] = frozenset()) -> None:
        self.pods, self.refuse, self.evicted = pods, refuse, []

    def list(self, resource: Any, **_: Any) -> list[Pod]:
        return list(self.pods)

    def create(self, obj: Any, name: str, namespace: str) -> None:
        if name in self.refuse:
            raise api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.")
        self.evicted.append(f"{namespace}/{name}")


def _actuator(client: FakeClient, **options: Any) -> Actuator:
    return Actuator(client, "gpu-operator", pod_deletion=DrainOptions(**options), clock=lambda: 100.0,
                    sleep=lambda _: None)  # type: ignore[arg-type]


def test_gpu_pods_are_evicted_and_the_rest_left() -> None:
    client = FakeClient([_pod("train"), _pod("web", gpu=False)])
    actuator = _actuator(client)
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert client.evicted == ["ml/train"] and not actuator.refusals


def test_a_pod_with_emptydir_data_is_refused_before_any_eviction_unless_allowed() -> None:
    client = FakeClient([_pod("train"), _pod("scratch", empty_dir=True)])
    actuator = _actuator(client)
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert client.evicted == []
    assert "ml/scratch has emptyDir data" in actuator.refusals["gpu-0"]
    assert "upgradePolicy.podDeletion" in actuator.refusals["gpu-0"]
    allowed = _actuator(client, delete_emptydir_data=True)
    allowed.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert sorted(client.evicted) == ["ml/scratch", "ml/train"]


def test_a_pod_no_controller_manages_needs_force() -> None:
    client = FakeClient([_pod("bare", owned=False)])
    actuator = _actuator(client)
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert "not managed by a controller" in actuator.refusals["gpu-0"] and client.evicted == []
    _actuator(client, force=True).run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert client.evicted == ["ml/bare"]


def test_a_disruption_budget_refusal_is_remembered_with_its_time_and_forgotten_after_the_step() -> None:
    client = FakeClient([_pod("train")], refuse={"train"})
    actuator = _actuator(client)
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert actuator.blocked_since == {"gpu-0": 100.0} and not actuator.refusals
    actuator.forget(["gpu-1"])
    assert actuator.blocked_since == {}


def test_counts_follow_the_selectors_and_keep_terminating_pods_until_gone() -> None:
    job = _pod("job", gpu=False, labels={"app": "job"})
    leaving = _pod("leaving")
    leaving.metadata.deletionTimestamp = "2026-11-24T00:00:00Z"
    counts = node_pods([pod_facts(p) for p in (job, leaving, _pod("train"))], parse_selector("app=job"),
                       DrainOptions(pod_selector=parse_selector("app!=job")))
    assert (counts.gpu_pods, counts.jobs_running, counts.drainable) == (2, 1, 2)
