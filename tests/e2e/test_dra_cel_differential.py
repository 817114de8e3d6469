"""`dra match` against the real scheduler: a corpus of CEL selectors, each judged by both, must get one verdict.

Kubernetes' CEL environment for DRA (k8s.io/dynamic-resource-allocation cel/compile.go, with the apiserver's
library: staging/src/k8s.io/apiserver/pkg/cel/semver.go and quantity.go, library/semverlib.go and quantity.go)
has traps that a CEL evaluator of our own could get wrong in either direction: `kubernetes.Semver` and
`kubernetes.Quantity` have `Equal` only (no `<`), comparing one with a string is a `no such overload` error when
the version is on the left and merely false when the string is; a capacity is a quantity to the type checker, so
`memory >= quantity('80Gi')` is refused when the claim is created; `sub` hands back a reference that `==` accepts
on its left only;
a missing attribute is `no such key`; and the allocator (structured/internal/stable/allocator_stable.go,
`allocateOne`, `selectorsMatch`) stops the whole allocation at the first evaluation error in device order,
while an `All` request evaluates every device first.

On the e2e control plane (Kubernetes 1.36, kube-scheduler with DynamicResourceAllocation, KWOK nodes) every
selector gets its own node, publishing the ResourceSlice NVIDIA's DRA driver would publish for a simulated 8x H100
node (the attributes of dra-driver-nvidia-gpu v0.4.1's GPU kubelet plugin, versions as semver, memory as a
quantity), a ResourceClaim with the selector and a pod pinned to that node. The scheduler's verdict is read from
the API: the claim refused at creation (`rejected`), allocated (`allocated`), the pod unschedulable
(`unschedulable`), or the scheduler failing with a CEL runtime error (`error`, whose text must be the one
`dra match` gives). `dra match` judges the same claim against the same devices offline. The corpus and its
verdicts are tests/dra/cel_corpus.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Event, Node, Pod
from lightkube.resources.resource_v1 import ResourceClaim, ResourceSlice

from gpu_operator.dra.slices import PublishedDevice, resource_slice
from gpu_operator.render.dra import device_classes
from tests.dra.cel_corpus import (
    CORPUS,
    NAMESPACE,
    Verdict,
    claim,
    offline_verdict,
    simulated_node_devices,
)
from tests.e2e.apply import KindTable, ensure_namespaces, server_side_apply
from tests.e2e.control_plane import KWOK_ANNOTATION
from tests.e2e.report import note
from tests.e2e.waiting import wait_until

pytestmark = pytest.mark.e2e

_NODE_CONDITION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
#: What the DRA plugin says when no allocation exists (any other reason, such as a taint, is not its verdict).
_NO_ALLOCATION = "cannot allocate all claims"


def _pod(index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"cel-{index}", "namespace": NAMESPACE},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": f"dra-cel-{index}"}, "restartPolicy": "Never",
                     # a KWOK node that misses a lease renewal on a busy machine is tainted for a moment
                     "tolerations": [{"key": key, "operator": "Exists"} for key in _NODE_CONDITION_TAINTS],
                     "resourceClaims": [{"name": "gpus", "resourceClaimName": f"cel-{index}"}],
                     "containers": [{"name": "main", "image": "busybox", "command": ["true"],
                                     "resources": {"claims": [{"name": "gpus"}]}}]}}


def _node(index: int) -> dict[str, Any]:
    name = f"dra-cel-{index}"
    resources = {"cpu": "96", "memory": "1800Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                   "type": "kwok"},
                         "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}},
            "status": {"capacity": resources, "allocatable": resources}}


@pytest.fixture(scope="module")
def devices() -> list[PublishedDevice]:
    return simulated_node_devices()


@pytest.fixture(scope="module")
def cel_nodes(admin: Client, devices: list[PublishedDevice]) -> Iterator[list[str]]:
    """One Ready KWOK node per case, each with the slice of a simulated 8x H100 node; the driver's classes."""
    names = [f"dra-cel-{index}" for index in range(len(CORPUS))]
    slices = [resource_slice(name, devices) for name in names]
    objects = [*device_classes(), *(_node(i) for i in range(len(CORPUS))), *slices]
    failures = server_side_apply(admin, objects, KindTable(), dry_run=False)
    assert not failures, "\n".join(map(str, failures))

    def ready() -> bool:
        nodes = {n.metadata.name: n for n in admin.list(Node, labels={"type": "kwok"}) if n.metadata}
        return all(name in nodes and any(c.type == "Ready" and c.status == "True"
                                         for c in (nodes[name].status.conditions or [])) for name in names)

    wait_until(ready, timeout=90, what="KWOK to report the DRA CEL nodes Ready")
    ensure_namespaces(admin, [{"kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    try:
        yield names
    finally:
        for index, name in enumerate(names):
            with contextlib.suppress(ApiError):  # cleanup only
                admin.delete(Pod, f"cel-{index}", namespace=NAMESPACE, grace_period=0)
            with contextlib.suppress(ApiError):
                admin.delete(ResourceClaim, f"cel-{index}", namespace=NAMESPACE)
            with contextlib.suppress(ApiError):
                admin.delete(ResourceSlice, slices[index]["metadata"]["name"])
            with contextlib.suppress(ApiError):
                admin.delete(Node, name)


def _scheduler_messages(admin: Client, pod: str) -> list[str]:
    """What the scheduler said about the pod: its PodScheduled condition and its FailedScheduling events."""
    status = admin.get(Pod, pod, namespace=NAMESPACE).status
    messages = [c.message or "" for c in (status.conditions or []) if c.type == "PodScheduled"] if status else []
    events = admin.list(Event, namespace=NAMESPACE, fields={"involvedObject.name": pod})
    return messages + [e.message or "" for e in events if e.reason == "FailedScheduling"]


def _scheduler_verdict(admin: Client, index: int) -> tuple[Verdict, str] | None:
    claim = admin.get(ResourceClaim, f"cel-{index}", namespace=NAMESPACE)
    if claim.status is not None and claim.status.allocation is not None:
        return "allocated", ""
    messages = _scheduler_messages(admin, f"cel-{index}")
    errors = [m for m in messages if "CEL runtime error" in m]
    if errors:
        return "error", errors[0]
    status = admin.get(Pod, f"cel-{index}", namespace=NAMESPACE).status
    unschedulable = [c.message or "" for c in (status.conditions or []) if c.type == "PodScheduled"
                     and c.status == "False" and c.reason == "Unschedulable"] if status is not None else []
    if any(_NO_ALLOCATION in message for message in unschedulable):
        return "unschedulable", unschedulable[0]
    return None


def test_dra_match_and_the_scheduler_agree_on_every_selector(admin: Client, cel_nodes: list[str],
                                                             devices: list[PublishedDevice]) -> None:
    assert len(CORPUS) >= 30
    offline = [offline_verdict(claim(i, case), devices) for i, case in enumerate(CORPUS)]
    # the corpus states the verdicts, so a change in either judge shows as a disagreement with the table too
    assert [v for v, _ in offline] == [case.wanted for case in CORPUS], [
        (case.expression, case.count, case.wanted, got) for case, got in zip(CORPUS, offline) if got[0] != case.wanted]
    scheduler: dict[int, tuple[Verdict, str]] = {}
    for index, case in enumerate(CORPUS):
        try:
            admin.create(ResourceClaim.from_dict(claim(index, case)))
        except ApiError as error:
            assert error.status.code == 422, error
            scheduler[index] = ("rejected", error.status.message or "")
            continue
        admin.create(Pod.from_dict(_pod(index)))

    def settled() -> bool:
        for index in range(len(CORPUS)):
            if index not in scheduler:
                verdict = _scheduler_verdict(admin, index)
                if verdict is not None:
                    scheduler[index] = verdict
        return len(scheduler) == len(CORPUS)

    wait_until(settled, timeout=180, what="the scheduler to allocate, refuse or fail every claim", interval=1.0)
    disagreements = []
    for index, case in enumerate(CORPUS):
        (ours, our_text), (theirs, their_text) = offline[index], scheduler[index]
        if ours != theirs:
            disagreements.append((case.expression, case.count, f"dra match: {ours} {our_text}",
                                  f"scheduler: {theirs} {their_text}"))
        elif ours == "error" and our_text not in their_text:
            disagreements.append((case.expression, case.count, f"dra match says {our_text!r}",
                                  f"the scheduler says {their_text!r}"))
        elif ours == "rejected" and "no matching overload" not in their_text:
            disagreements.append((case.expression, "the API server refused it for another reason", their_text))
    assert not disagreements, "\n".join(map(str, disagreements))
    counts = {verdict: sum(v == verdict for v, _ in offline) for verdict in ("allocated", "unschedulable", "error",
                                                                            "rejected")}
    note(f"DRA CEL: {len(CORPUS)} selectors, dra match = kube-scheduler on every one ({counts})")
