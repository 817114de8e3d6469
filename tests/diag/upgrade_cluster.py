"""A driver rollout on a (fake) API server, for `upgrade status`: nodes in pools with upgrade states, driver pods
on old or new revisions, the DaemonSet's ControllerRevisions, the controller's Events and ConfigMaps."""

from __future__ import annotations

from typing import Any

NS = "gpu-operator"
POOLS = {"c-0": "canary", "t-0": "train", "t-1": "train"}
STATES = {"c-0": "upgrade-failed", "t-0": "upgrade-required", "t-1": "upgrade-required"}


def node(name: str, states: dict[str, str] = STATES) -> dict[str, Any]:
    annotations = {"nvidia.com/gpu-driver-upgrade-failure-reason": "the new driver pod restarted more than 10 times "
                   "without becoming Ready"} if states[name] == "upgrade-failed" else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": annotations,
        "labels": {"kubernetes.azure.com/agentpool": POOLS[name], "nvidia.com/gpu-driver-upgrade-state": states[name]}}}


def pod(node: str, revision: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"nvidia-driver-daemonset-{node}", "namespace": NS,
        "labels": {"app.kubernetes.io/component": "nvidia-driver", "controller-revision-hash": revision},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-driver-daemonset",
                             "uid": "u", "controller": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}


def revision(number: int, digest: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": number, "data": {}, "metadata": {
        "name": f"nvidia-driver-daemonset-{digest}", "namespace": NS, "labels": {"controller-revision-hash": digest},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "nvidia-driver-daemonset",
                             "uid": "u", "controller": True}]}}


def event(node: str, state: str, at: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{node}.{state}", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": node, "apiVersion": "v1"}, "reason": "GPUDriverUpgrade",
            "message": f"Successfully updated node state label to {state}", "lastTimestamp": at}


def config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data}
