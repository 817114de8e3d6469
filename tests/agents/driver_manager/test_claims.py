"""Pods holding NVIDIA DRA ResourceClaims are GPU pods (issue 20, item 14), for the driver manager."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models.core_v1 import Container, PodResourceClaim, PodResourceClaimStatus, PodSpec, PodStatus
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod

from gpu_operator.agents.driver_manager.claims import allocated_to_nvidia_gpu, claim_names
from gpu_operator.agents.driver_manager.kube import KubeFailure
from gpu_operator.agents.driver_manager.pods import gpu_pods
from tests.agents.driver_manager.test_kube import FakeClient, api, api_error


def dra_pod(name: str = "train", *, direct: str | None = None, generated: str | None = None,
            phase: str = "Running") -> Pod:
    """A pod with one ResourceClaim: named directly, or generated from a template (its name in the status)."""
    claims = [PodResourceClaim(name="gpu", resourceClaimName=direct)] if direct else \
        [PodResourceClaim(name="gpu", resourceClaimTemplateName="one-gpu")]
    statuses = [PodResourceClaimStatus(name="gpu", resourceClaimName=generated)] if generated else None
    return Pod(metadata=ObjectMeta(name=name, namespace="ml"),
               spec=PodSpec(nodeName="gpu-0", containers=[Container(name="c")], resourceClaims=claims),
               status=PodStatus(phase=phase, resourceClaimStatuses=statuses))


def claim(driver: str = "gpu.nvidia.com", *, admin: bool = False, allocated: bool = True) -> dict[str, Any]:
    result = {"request": "gpu", "driver": driver, "pool": "gpu-0", "device": "gpu-0", **({"adminAccess": True} if admin else {})}
    status = {"allocation": {"devices": {"results": [result]}}} if allocated else {}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"}, "status": status}


def test_claim_names_come_from_the_spec_or_the_generated_claims_status() -> None:
    """k8s-driver-manager v0.12.0 internal/kubernetes/client.go resolveResourceClaimName."""
    assert claim_names(dra_pod(direct="shared-gpu")) == ["shared-gpu"]
    assert claim_names(dra_pod(generated="train-gpu-x7k2p")) == ["train-gpu-x7k2p"]
    assert claim_names(dra_pod()) == []  # the template's claim does not exist yet: nothing is allocated


@pytest.mark.parametrize(("obj", "admin", "expected"), [
    (claim(), False, True),
    (claim("gpu.example.com"), True, False),
    (claim(allocated=False), True, False),
    (claim(admin=True), True, True),     # the driver manager counts admin access
    (claim(admin=True), False, False),   # the upgrade controller does not
])
def test_an_allocation_by_nvidias_dra_driver_is_a_gpu(obj: dict[str, Any], admin: bool, expected: bool) -> None:
    """k8s-driver-manager v0.12.0 internal/kubernetes/client.go isAllocatedNvidiaGPUClaim; gpu-operator v26.7.0
    controllers/nodelabeling_controller.go PodHasNVIDIAGPUClaim (includeAdminAccess)."""
    assert allocated_to_nvidia_gpu(obj, include_admin_access=admin) is expected


def test_the_driver_manager_evicts_a_pod_holding_an_nvidia_dra_claim() -> None:
    """Item 14. k8s-driver-manager v0.12.0 internal/kubernetes/client.go podUsesGPU -> podHasGPUResourceClaim: a
    pod whose ResourceClaim NVIDIA's DRA driver allocated is a GPU pod; a claim that is gone counts as none."""
    pods = [dra_pod("train", direct="c1"), dra_pod("other", direct="c2"), dra_pod("gone", direct="c3"),
            dra_pod("done", direct="c4", phase="Succeeded")]
    client = FakeClient(pods, claim(), claim("gpu.example.com"), api_error(404))
    node, _ = api(client)
    facts = node.pods()
    assert [p.name for p in gpu_pods(facts)] == ["train"]
    reads = [(c[1][1], c[2]) for c in client.calls if c[0] == "get"]
    assert reads == [("c1", {"namespace": "ml"}), ("c2", {"namespace": "ml"}), ("c3", {"namespace": "ml"})]
    assert client.calls[1][1][0].__name__ == "ResourceClaim"


def test_a_claim_the_driver_manager_cannot_read_is_a_failure_not_a_guess() -> None:
    """k8s-driver-manager v0.12.0 podHasGPUResourceClaim returns the read error (the run fails, restoring the node)."""
    node, _ = api(FakeClient([dra_pod(direct="c1")], api_error(403, "forbidden")))
    with pytest.raises(KubeFailure, match="get resourceclaim ml/c1: 403 forbidden"):
        node.pods()
