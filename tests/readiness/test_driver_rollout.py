"""When a driver rollout is finished: every driver pod at its DaemonSet's newest revision, no node upgrading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpu_operator.readiness import (
    DriverRolloutFailed,
    DriverRolloutTimeout,
    RolloutSnapshot,
    driver_rollout,
    wait_for_driver_rollout,
)

DS = "nvidia-driver-daemonset"


def _snapshot(pods: list[tuple[str, str]], nodes: dict[str, tuple[str, str]], observed: int = 2) -> RolloutSnapshot:
    return RolloutSnapshot({DS: (2, observed, "new")}, [(node, DS, revision) for node, revision in pods], nodes)


def test_finished_when_every_pod_is_new_and_every_node_done() -> None:
    rollout = driver_rollout(_snapshot([("a", "new"), ("b", "new")], {"a": ("upgrade-done", ""), "b": ("", "")}))
    assert rollout.finished and rollout.done == ("a", "b")


@pytest.mark.parametrize(("pods", "nodes", "pending"), [
    ([("a", "old")], {"a": ("upgrade-done", "")}, ("a",)),  # the controller has not marked it yet
    ([("a", "new")], {"a": ("validation-required", "")}, ("a",)),
    ([], {"a": ("pod-restart-required", "")}, ("a",)),  # between the old pod and the new one
])
def test_pending(pods: list[tuple[str, str]], nodes: dict[str, tuple[str, str]], pending: tuple[str, ...]) -> None:
    rollout = driver_rollout(_snapshot(pods, nodes))
    assert rollout.pending == pending and not rollout.finished


def test_a_daemonset_that_has_not_seen_its_new_spec_is_not_finished_even_if_every_pod_matches() -> None:
    rollout = driver_rollout(_snapshot([("a", "new")], {"a": ("upgrade-done", "")}, observed=1))
    assert rollout.unobserved == (DS,) and not rollout.finished


def test_a_deleted_node_does_not_hold_the_rollout() -> None:
    assert driver_rollout(_snapshot([("gone", "old"), ("a", "new")], {"a": ("upgrade-done", "")})).finished


def test_a_failed_node_ends_the_wait_with_its_reason_and_the_retry_command() -> None:
    snapshot = _snapshot([("a", "old")], {"a": ("upgrade-failed", "a PodDisruptionBudget refused the eviction")})
    with pytest.raises(DriverRolloutFailed, match="a: a PodDisruptionBudget refused.*upgrade-required"):
        wait_for_driver_rollout(lambda: snapshot, 60, clock=lambda: 0.0, sleep=lambda _: None)


def test_the_deadline_names_the_pending_nodes() -> None:
    times = iter([0.0, 0.0, 30.0, 61.0, 61.0])
    snapshot = _snapshot([("a", "old")], {"a": ("upgrade-required", "")})
    with pytest.raises(DriverRolloutTimeout, match="pending: a"):
        wait_for_driver_rollout(lambda: snapshot, 60, poll_seconds=30, clock=lambda: next(times), sleep=lambda _: None)


def test_a_read_that_fails_is_retried_until_it_succeeds() -> None:
    answers = iter([ConnectionError("down"), _snapshot([("a", "new")], {"a": ("upgrade-done", "")})])

    def read() -> RolloutSnapshot:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for_driver_rollout(read, 60, clock=lambda: 0.0, sleep=lambda _: None).finished


def test_the_lister_reads_every_driver_daemonset_a_per_pool_one_included(tmp_path: Path) -> None:
    """A pool with a driver of its own gets a DaemonSet of NVIDIA's NVIDIADriver naming
    (nvidia-gpu-driver-<os>-<hash>, app label of its own): `pulumi up` waits for its nodes too."""
    from gpu_operator.readiness import kubeconfig_rollout_lister
    from tests.agents.kube.fake_apiserver import FakeApiServer

    component = {"app.kubernetes.io/component": "nvidia-driver"}

    def daemonset(name: str) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {
            "name": name, "namespace": "gpu-operator", "generation": 2, "labels": {"app": name, **component}},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"observedGeneration": 2, "currentNumberScheduled": 1, "desiredNumberScheduled": 1,
                       "numberMisscheduled": 0, "numberReady": 1}}

    def pod(name: str, owner: str, node: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "gpu-operator",
            "labels": {"app": owner, "controller-revision-hash": "h1", **component},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": "u"}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}

    with FakeApiServer() as server:
        for obj in (daemonset("nvidia-driver-daemonset"), daemonset("nvidia-gpu-driver-ubuntu22.04-5fbff69969"),
                    pod("a", "nvidia-driver-daemonset", "n-a"), pod("b", "nvidia-gpu-driver-ubuntu22.04-5fbff69969",
                                                                    "n-b"),
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-a"}},
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-b"}}):
            server.add(obj)
        snapshot = kubeconfig_rollout_lister(server.kubeconfig(tmp_path).read_text(), "gpu-operator",
                                             trust_env=False)()
    assert sorted(snapshot.daemonsets) == ["nvidia-driver-daemonset", "nvidia-gpu-driver-ubuntu22.04-5fbff69969"]
    assert sorted(node for node, _, _ in snapshot.pods) == ["n-a", "n-b"]
