"""Publishing the labels as an NFD `NodeFeature` object - GFD's default output since v0.19.

Instead of writing NFD's features.d file, GFD keeps one `NodeFeature` (`nfd.k8s-sigs.io/v1alpha1`) per node in
its own namespace, which nfd-master turns into node labels:

* name `nvidia-features-for-<node>`, label `nfd.node.kubernetes.io/node-name: <node>`;
* `spec.labels` holds the labels, `spec.features` is empty (flags, attributes and instances with no entries);
* ownerReferences: GFD's DaemonSet (as controller) and its Pod, taken from the Pod named by `POD_NAME`, so the
  object is garbage-collected with the DaemonSet. Without a pod name, or when the Pod cannot be read, there are
  none (a warning).

The object is created when missing and replaced when its labels, owners or spec differ; an unchanged object is
not written. GFD never deletes it, so withdrawing does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_operator.agents.kube import NODE_FEATURES, PODS, KubeClient, KubeError, NotFound

__all__ = [
    "NAME_PREFIX",
    "NODE_NAME_LABEL",
    "NodeFeatureSink",
    "node_feature_name",
    "node_feature_object",
    "owner_references",
    "resolve_owner_references",
]

_log = logging.getLogger(__name__)

NAME_PREFIX = "nvidia-features-for"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"

Object = dict[str, Any]


def node_feature_name(node: str) -> str:
    return f"{NAME_PREFIX}-{node}"


def node_feature_object(
    node: str, namespace: str, labels: Mapping[str, str], owners: Sequence[Mapping[str, Any]] = ()
) -> Object:
    """The NodeFeature GFD keeps for `node`."""
    metadata: Object = {"name": node_feature_name(node), "namespace": namespace, "labels": {NODE_NAME_LABEL: node}}
    if owners:
        metadata["ownerReferences"] = [dict(owner) for owner in owners]
    return {
        "apiVersion": NODE_FEATURES.api_version,
        "kind": NODE_FEATURES.kind,
        "metadata": metadata,
        "spec": {"features": {"flags": {}, "attributes": {}, "instances": {}}, "labels": dict(labels)},
    }


def owner_references(pod: Mapping[str, Any]) -> list[Object]:
    """GFD's owners for its NodeFeature: the pod's DaemonSet (controller) and the pod; none without a DaemonSet."""
    daemonset = next(
        (o for o in pod.get("metadata", {}).get("ownerReferences") or [] if o.get("kind") == "DaemonSet"), None
    )
    if daemonset is None:
        return []
    return [
        {
            "apiVersion": daemonset["apiVersion"],
            "kind": "DaemonSet",
            "name": daemonset["name"],
            "uid": daemonset["uid"],
            "controller": True,
        },
        {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]},
    ]


def resolve_owner_references(client: KubeClient, namespace: str, pod_name: str) -> list[Object]:
    """The owners for the pod named `pod_name`; [] (with a warning) when there is none or it cannot be read."""
    if not pod_name:
        _log.info("pod name not provided, skipping owner reference resolution")
        return []
    try:
        return owner_references(client.get(PODS, pod_name, namespace))
    except KubeError as error:
        _log.warning("failed to resolve owner references: %s", error)
        return []


def _unchanged(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    metadata = current.get("metadata", {})
    return (
        (metadata.get("labels") or {}) == desired["metadata"]["labels"]
        and (metadata.get("ownerReferences") or []) == desired["metadata"].get("ownerReferences", [])
        and current.get("spec") == desired["spec"]
    )


class NodeFeatureSink:
    """A `LabelSink` keeping the node's NodeFeature object up to date. Raises KubeError when publishing fails."""

    def __init__(self, client: KubeClient, namespace: str, node: str, owners: Sequence[Mapping[str, Any]] = ()) -> None:
        self._client = client
        self._namespace = namespace
        self._node = node
        self._owners = list(owners)

    def publish(self, labels: Mapping[str, str]) -> None:
        desired = node_feature_object(self._node, self._namespace, labels, self._owners)
        name = desired["metadata"]["name"]
        try:
            current = self._client.get(NODE_FEATURES, name, self._namespace)
        except NotFound:
            self._client.create(NODE_FEATURES, desired, self._namespace)
            _log.info("created NodeFeature object %s", name)
            return
        if _unchanged(current, desired):
            _log.info("no changes in NodeFeature object %s", name)
            return
        metadata = {**current["metadata"], **desired["metadata"]}
        if not self._owners:
            metadata.pop("ownerReferences", None)
        self._client.replace(NODE_FEATURES, {**current, "metadata": metadata, "spec": desired["spec"]}, self._namespace)
        _log.info("updated NodeFeature object %s", name)

    def withdraw(self) -> None:
        return None
