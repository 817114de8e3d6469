"""Whether a driver rollout is finished, read from what the API shows: DaemonSets, their revisions, pods, nodes.

After `driver.version` (or anything else in the driver's template) changes, the operator controller walks every
GPU node through the upgrade. The rollout is finished when each driver DaemonSet has processed its newest spec
(`status.observedGeneration` reached `metadata.generation`: its newest ControllerRevision exists), every node
running one of its pods runs it at that revision, and no such node is still in an upgrade state. A node in
`upgrade-failed` ends the wait at once with its reason: the controller will not retry it by itself.

`wait_for_driver_rollout` polls a lister until then; `pulumi up` uses it through `components.DriverRollout`
when `controller.waitForDriverRollout` is on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_operator.upgrade.revisions import REVISION_LABEL, newest_revisions
from gpu_operator.upgrade.state_machine import FAILURE_ANNOTATION, STATE_LABEL

__all__ = [
    "DriverRollout",
    "DriverRolloutFailed",
    "DriverRolloutTimeout",
    "RolloutSnapshot",
    "driver_rollout",
    "kubeconfig_rollout_lister",
    "wait_for_driver_rollout",
]

#: Every driver DaemonSet and its pods carry it: the cluster's, one per OS or kernel, and one per driver of
#: a pool of its own (NVIDIA's NVIDIADriver DaemonSets, nvidia-gpu-driver-<os>-<hash>, carry it too).
DRIVER_COMPONENT = ("app.kubernetes.io/component", "nvidia-driver")


@dataclass(frozen=True)
class RolloutSnapshot:
    """What the wait reads: per DaemonSet (generation, observed generation, newest revision hash); per driver pod
    (node, owner DaemonSet, revision hash); per node (state label, failure reason)."""

    daemonsets: Mapping[str, tuple[int, int, str]] = field(default_factory=dict)
    pods: Sequence[tuple[str, str, str]] = ()
    nodes: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class DriverRollout:
    done: tuple[str, ...]
    pending: tuple[str, ...]
    failed: Mapping[str, str]
    unobserved: tuple[str, ...] = ()
    """DaemonSets whose newest spec the DaemonSet controller has not processed yet."""

    @property
    def finished(self) -> bool:
        return not self.pending and not self.unobserved and not self.failed

    def describe(self) -> str:
        words = [f"driver rollout: {len(self.done)} node(s) done, {len(self.pending)} pending, "
                 f"{len(self.failed)} failed"]
        if self.pending:
            words.append("pending: " + ", ".join(self.pending[:10]) + (" ..." if len(self.pending) > 10 else ""))
        if self.unobserved:
            words.append("DaemonSets not yet at their newest spec: " + ", ".join(self.unobserved))
        return "; ".join(words)


class DriverRolloutFailed(RuntimeError):
    def __init__(self, rollout: DriverRollout) -> None:
        reasons = "; ".join(f"{node}: {reason}" for node, reason in sorted(rollout.failed.items()))
        super().__init__(
            f"the driver upgrade failed on {len(rollout.failed)} node(s) ({reasons}). Fix the cause (kubectl "
            "describe node; the controller's events have reason GPUDriverUpgrade), then retry the node with "
            "`kubectl label node <node> nvidia.com/gpu-driver-upgrade-state=upgrade-required --overwrite`")
        self.rollout = rollout


class DriverRolloutTimeout(TimeoutError):
    def __init__(self, rollout: DriverRollout, timeout_seconds: float) -> None:
        super().__init__(f"{rollout.describe()} after {timeout_seconds:g} s. The controller's status: kubectl -n "
                         "<namespace> get configmap gpu-operator-status -o yaml; or raise "
                         "controller.rolloutTimeoutSeconds")
        self.rollout = rollout


def driver_rollout(snapshot: RolloutSnapshot) -> DriverRollout:
    """How far the rollout is, node by node."""
    unobserved = tuple(sorted(name for name, (generation, observed, _) in snapshot.daemonsets.items()
                              if observed < generation))
    done, pending, failed = [], [], {}
    pods = {node: (owner, revision) for node, owner, revision in snapshot.pods}
    # a node between its old and new driver pod has none: its upgrade state keeps it in the count
    upgrading = {node for node, (state, _) in snapshot.nodes.items() if state not in ("", "upgrade-done")}
    for node in sorted((set(pods) & set(snapshot.nodes)) | upgrading):
        state, reason = snapshot.nodes[node]
        owner, revision = pods.get(node, ("", ""))
        newest = snapshot.daemonsets.get(owner, (0, 0, ""))[2]
        if state == "upgrade-failed":
            failed[node] = reason or "no reason recorded"
        elif node in pods and revision == newest and state in ("upgrade-done", ""):
            done.append(node)
        else:
            pending.append(node)
    return DriverRollout(tuple(done), tuple(pending), failed, unobserved)


def wait_for_driver_rollout(
    snapshot: Callable[[], RolloutSnapshot],
    timeout_seconds: float,
    poll_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> DriverRollout:
    """Poll until the rollout is finished; DriverRolloutFailed at the first failed node, DriverRolloutTimeout at
    the deadline. A failing read (the API server unreachable for a moment) is retried until the deadline."""
    deadline = clock() + timeout_seconds
    while True:
        try:
            rollout = driver_rollout(snapshot())
        except Exception:
            if clock() >= deadline:
                raise
        else:
            if rollout.failed:
                raise DriverRolloutFailed(rollout)
            if rollout.finished:
                return rollout
            if clock() >= deadline:
                raise DriverRolloutTimeout(rollout, timeout_seconds)
        sleep(max(0.0, min(poll_seconds, deadline - clock())))


def kubeconfig_rollout_lister(kubeconfig: str | Mapping[str, Any], namespace: str, context: str | None = None,
                              trust_env: bool = True) -> Callable[[], RolloutSnapshot]:
    """A reader of the rollout through the Kubernetes API (list on daemonsets, controllerrevisions and pods in
    `namespace`, and on nodes)."""
    import yaml
    from lightkube import Client, KubeConfig
    from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet
    from lightkube.resources.core_v1 import Node, Pod

    document = yaml.safe_load(kubeconfig) if isinstance(kubeconfig, str) else dict(kubeconfig)
    client = Client(KubeConfig.from_dict(document).get(context_name=context), trust_env=trust_env)
    selector = dict([DRIVER_COMPONENT])

    def read() -> RolloutSnapshot:
        newest = newest_revisions(client.list(ControllerRevision, namespace=namespace))
        daemonsets = {ds.metadata.name: (ds.metadata.generation or 0, (ds.status.observedGeneration or 0)
                                         if ds.status else 0, newest.get(ds.metadata.name, ""))
                      for ds in client.list(DaemonSet, namespace=namespace, labels=selector)}
        pods = [(pod.spec.nodeName, next((r.name for r in pod.metadata.ownerReferences or ()
                                          if r.kind == "DaemonSet"), ""),
                 (pod.metadata.labels or {}).get(REVISION_LABEL, ""))
                for pod in client.list(Pod, namespace=namespace, labels=selector)
                if pod.spec.nodeName and pod.metadata.deletionTimestamp is None]
        nodes = {node.metadata.name: ((node.metadata.labels or {}).get(STATE_LABEL, ""),
                                      (node.metadata.annotations or {}).get(FAILURE_ANNOTATION, ""))
                 for node in client.list(Node)}
        return RolloutSnapshot(daemonsets, pods, nodes)

    return read
