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
from gpu_operator.facts.label_selector import parse_selector
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
    return Actuator(client, "gpu-operator", pod_deletion=DrainOptions(**options), clock=lambda: 100.0)  # type: ignore[arg-type]


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
    assert actuator.waiting_for == {"gpu-0": "a PodDisruptionBudget refused the eviction of ml/train"}
    actuator.forget(["gpu-1"])
    assert actuator.blocked_since == {} and actuator.waiting_for == {}


def test_the_step_clock_starts_at_the_first_eviction_and_pods_stuck_terminating_keep_it_running() -> None:
    """Issue 27 item 4. kubectl's drain.Helper (k8s.io/kubectl/pkg/drain/drain.go `DeleteOrEvictPods` ->
    `evictPods` with `globalTimeout`, then `waitForDelete`), which k8s-operator-libs pod_manager.go
    `SchedulePodEviction` runs with `DeletionSpec.TimeoutSecond`: one timeout from the first eviction covers the
    refusals and the wait for the pods to be gone; a pod stuck Terminating is waited for, and counted."""
    stuck = _pod("stuck")
    stuck.metadata.deletionTimestamp = "2026-11-24T00:00:00Z"
    client = FakeClient([_pod("train"), stuck])
    now = [100.0]
    actuator = Actuator(client, "gpu-operator", clock=lambda: now[0])  # type: ignore[arg-type]
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert client.evicted == ["ml/train"]  # the terminating pod is not evicted again
    assert actuator.blocked_since == {"gpu-0": 100.0}  # nothing was refused: the clock runs all the same
    assert actuator.waiting_for == {"gpu-0": "ml/train, ml/stuck still terminating"}
    client.pods = [stuck]
    now[0] = 250.0
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert actuator.blocked_since == {"gpu-0": 100.0} and actuator.waiting_for == {"gpu-0": "ml/stuck still terminating"}


def test_counts_follow_the_selectors_and_keep_terminating_pods_until_gone() -> None:
    job = _pod("job", gpu=False, labels={"app": "job"})
    leaving = _pod("leaving")
    leaving.metadata.deletionTimestamp = "2026-11-24T00:00:00Z"
    counts = node_pods([pod_facts(p) for p in (job, leaving, _pod("train"))], parse_selector("app=job"),
                       DrainOptions(pod_selector=parse_selector("app!=job")))
    assert (counts.gpu_pods, counts.jobs_running, counts.drainable) == (2, 1, 2)


class ClaimClient(FakeClient):
    """Also answers ResourceClaim reads: name -> claim document, or an exception."""

    def __init__(self, pods: list[Pod], claims: dict[str, Any]) -> None:
        super().__init__(pods)
        self.claims = claims

    def get(self, resource: Any, name: str, namespace: str) -> Any:
        answer = self.claims[name]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_pods_holding_nvidia_dra_claims_are_gpu_pods_for_the_controller() -> None:
    """Item 14. gpu-operator v26.7.0 cmd/gpu-operator/main.go gpuPodSpecFilter -> controllers/
    nodelabeling_controller.go PodHasNVIDIAGPUClaim(includeAdminAccess false): a pod with a claim NVIDIA's DRA
    driver allocated is deleted before the driver restarts; an admin-access allocation (a monitoring operand) is
    not; a claim that cannot be read counts as a GPU claim."""
    from tests.agents.driver_manager.test_claims import claim, dra_pod

    pods = [dra_pod("train", direct="c1"), dra_pod("monitor", direct="c2"), dra_pod("unknown", direct="c3"),
            dra_pod("other", direct="c4")]
    for pod in pods:
        pod.metadata.ownerReferences = OWNER
    client = ClaimClient(pods, {"c1": claim(), "c2": claim(admin=True), "c3": api_error(403, "forbidden"),
                                "c4": claim("gpu.example.com")})
    actuator = _actuator(client)
    assert actuator.count_pods(["gpu-0"])["gpu-0"].gpu_pods == 2
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert sorted(client.evicted) == ["ml/train", "ml/unknown"]


def test_a_drain_after_a_refused_deletion_starts_its_own_timeout() -> None:
    """Item 15. drain_manager.go ScheduleNodesDrain runs a drain helper with its own Timeout after
    pod_manager.go updateNodeToDrainOrFailed: the deletion's refusal must not count against the drain."""
    client = FakeClient([_pod("train")], refuse={"train"})
    now = [100.0]
    actuator = Actuator(client, "gpu-operator", clock=lambda: now[0])  # type: ignore[arg-type]
    actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    now[0] = 500.0
    actuator.run_pod_action(PodAction("drain", "gpu-0"))
    assert actuator.blocked_since == {"gpu-0": 500.0}


def test_a_disruption_budget_is_timed_from_the_first_eviction() -> None:
    """Item 15. The drain helper's Timeout (pod_manager.go SchedulePodEviction) runs from the first eviction
    attempt; refusals round after round do not restart the clock, and the node fails at first attempt + timeout."""
    from gpu_operator.agents.controller.cluster_state import ClusterState, NodeFacts, PodFacts
    from gpu_operator.agents.controller.reconcile import reconcile
    from gpu_operator.agents.controller.settings import ControllerSettings, PodStepOptions
    from gpu_operator.labels import LabellingPolicy
    from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
    from gpu_operator.upgrade.state_machine import FAILURE_ANNOTATION

    client = FakeClient([_pod("train")], refuse={"train"})
    now = [1000.0]
    actuator = Actuator(client, "gpu-operator", clock=lambda: now[0])  # type: ignore[arg-type]
    settings = ControllerSettings("gpu-operator", LabellingPolicy(), UpgradePolicy(),
                                  steps=PodStepOptions(pod_deletion=DrainOptions(timeout=300.0)))
    nodes = {"gpu-0": NodeFacts("gpu-0", {STATE_LABEL: "pod-deletion-required"}, {}, True)}
    driver = (PodFacts("driver-gpu-0", "gpu-0", "nvidia-driver-daemonset", "nvidia-driver-daemonset", "rev",
                       ready=True, running_ready=True),)  # a managed node has a driver pod (BuildState)
    states = []
    for _ in range(40):  # one round every 10 s, as the requeue of a pod step does
        actuator.forget(["gpu-0"])
        state = ClusterState(nodes, driver, {}, actuator.count_pods(["gpu-0"]), dict(actuator.blocked_since),
                             dict(actuator.refusals), eviction_waiting_for=dict(actuator.waiting_for))
        plan = reconcile(state, settings, now[0])
        for action in plan.pod_actions:
            actuator.run_pod_action(action)
        states += [(now[0], p.labels.get(STATE_LABEL)) for p in plan.patches if p.labels.get(STATE_LABEL)]
        reasons = [p.annotations.get(FAILURE_ANNOTATION) for p in plan.patches if p.annotations.get(FAILURE_ANNOTATION)]
        if states:
            break
        now[0] += 10.0
    assert states == [(1300.0, "upgrade-failed")]
    assert reasons == ["a PodDisruptionBudget refused the eviction of ml/train after 300s "
                       "(upgradePolicy.podDeletion.timeoutSeconds)"]


def test_the_uncordon_is_a_merge_patch_on_the_wire() -> None:
    """Item 15. inplace ProcessUncordonRequiredNodes (cordon_manager.go Uncordon) makes the node schedulable before
    it is upgrade-done: asserted on the HTTP request the API server receives, in one merge patch with the state."""
    from lightkube import Client, KubeConfig
    from lightkube.config.models import Cluster, User

    from gpu_operator.agents.controller.cluster_state import ClusterState, NodeFacts, PodFacts
    from gpu_operator.agents.controller.reconcile import UPGRADE_ENABLED_ANNOTATION, reconcile
    from gpu_operator.agents.controller.settings import ControllerSettings
    from gpu_operator.labels import LabellingPolicy
    from gpu_operator.upgrade import STATE_LABEL, UpgradePolicy
    from tests.agents.kube.fake_apiserver import FakeApiServer

    labels = {STATE_LABEL: "uncordon-required"}
    with FakeApiServer() as server:
        server.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0", "labels": labels},
                    "spec": {"unschedulable": True}})
        client = Client(KubeConfig.from_one(cluster=Cluster(server=server.url), user=User()).get(), timeout=10)
        actuator = Actuator(client, "gpu-operator")
        driver = (PodFacts("driver-gpu-0", "gpu-0", "nvidia-driver-daemonset", "nvidia-driver-daemonset", "rev",
                           ready=True, running_ready=True),)  # a managed node has a driver pod (BuildState)
        state = ClusterState({"gpu-0": NodeFacts("gpu-0", labels, {UPGRADE_ENABLED_ANNOTATION: "true"}, True)}, driver)
        [patch] = reconcile(state, ControllerSettings("gpu-operator", LabellingPolicy(), UpgradePolicy()), 0).patches
        assert actuator.patch_node(patch)
        [request] = [r for r in server.requests if r.method == "PATCH"]
        assert request.path == "/api/v1/nodes/gpu-0"
        assert request.headers["content-type"] == "application/merge-patch+json"
        assert request.body["spec"] == {"unschedulable": False}
        assert request.body["metadata"]["labels"] == {STATE_LABEL: "upgrade-done"}
        node = server.get("nodes", "gpu-0")
        assert node["spec"]["unschedulable"] is False and node["metadata"]["labels"][STATE_LABEL] == "upgrade-done"


def test_throttling_is_not_a_disruption_budget() -> None:
    """A plain-text 429 is the API server's own throttling (its max-in-flight filter), left after the client's
    retries: the action fails and the next round evicts again; only the Eviction API's Status 429 is a budget's
    refusal. Found by the controller chaos e2e under overload, where throttled evictions were taken for refusals."""
    import httpx2
    import pytest

    from gpu_operator.agents.kube import TooManyRequests

    class Throttled(FakeClient):
        def create(self, obj: Any, name: str, namespace: str) -> None:
            request = httpx2.Request("POST", f"https://api/api/v1/namespaces/{namespace}/pods/{name}/eviction")
            response = httpx2.Response(429, text="Too many requests, please try again later.\n", request=request,
                                       headers={"content-type": "text/plain; charset=utf-8"})
            raise httpx2.HTTPStatusError("429", request=request, response=response)

    actuator = _actuator(Throttled([_pod("train")]))
    with pytest.raises(TooManyRequests):
        actuator.run_pod_action(PodAction("evict-gpu-pods", "gpu-0"))
    assert "gpu-0" not in actuator.waiting_for and not actuator.refusals
