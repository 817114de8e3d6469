"""`MofedReadiness`: a resource whose creation waits until MOFED is loaded on every InfiniBand node.

The Network Operator reports MOFED per node in the `network.nvidia.com/operator.mofed.wait` label (`false` once
the node's driver pod is ready); Azure's install scripts poll that label before they install the GPU operator.
This resource does the same inside `pulumi up`: a dynamic resource whose create (and update, when what it waits
for changed) polls the IB nodes of the stack's IB pools through the Kubernetes API until at least `expectedNodes` of them carry `false`
and none is still waiting, or fails the update at `timeoutSeconds` naming the nodes still waiting. Anything that
depends on it (the GPU operator, with `network.waitForMofed`) is created only after that.

`pulumi preview` never waits (dynamic providers do not run on preview). A later `pulumi up` with nothing changed
does not wait again; a change of the NicClusterPolicy (`policyDigest`), of the MOFED driver image it asks for
(`mofedImage`) or of the expected node count does. Since the label stays `false` while the previous MOFED keeps
running (the driver DaemonSets update `OnDelete`), a wait with `mofedImage` ends only once every IB node's driver
pod runs that version (:func:`gpu_operator.readiness.mofed_readiness`). The polling runs where Pulumi runs, with
the stack's kubeconfig (it needs `list` on nodes, and on pods in the Network Operator's namespace).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from gpu_operator.readiness import (
    DriverImage,
    MofedNotReady,
    kubeconfig_mofed_pod_lister,
    kubeconfig_node_lister,
    wait_for_mofed,
)

__all__ = ["MofedReadiness", "MofedReadinessProvider"]

#: Inputs whose change means "wait again"; the kubeconfig (a rotated credential) does not.
_WAIT_AGAIN_ON = ("expectedNodes", "mofedImage", "policyDigest", "pools", "timeoutSeconds")


def _wanted(props: dict[str, Any]) -> DriverImage | None:
    image = props.get("mofedImage")
    if not image:
        return None
    return DriverImage(str(image["repository"]), str(image["image"]), str(image["version"]))


class MofedReadinessProvider(pulumi.dynamic.ResourceProvider):
    """Waits on create and on a relevant update; deleting waits for nothing."""

    def _listers(self, props: dict[str, Any]) -> tuple[Any, Any]:
        """The node lister and, with a driver image to wait for, the driver pod lister."""
        nodes = kubeconfig_node_lister(props["kubeconfig"], pools=tuple(props.get("pools") or ()))
        pods = None
        if _wanted(props) is not None:
            pods = kubeconfig_mofed_pod_lister(props["kubeconfig"], str(props["namespace"]))
        return nodes, pods

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        list_nodes, list_pods = self._listers(props)
        try:
            readiness = wait_for_mofed(list_nodes, int(props["expectedNodes"]), float(props["timeoutSeconds"]),
                                       float(props.get("pollSeconds", 10)), list_pods=list_pods,
                                       wanted=_wanted(props))
        except MofedNotReady as error:
            raise RuntimeError(f"network.waitForMofed: {error}") from None
        return {
            "expectedNodes": int(props["expectedNodes"]),
            "mofedImage": props.get("mofedImage"),
            "namespace": props.get("namespace"),
            "policyDigest": props["policyDigest"],
            "pools": list(props.get("pools") or ()),
            "timeoutSeconds": int(props["timeoutSeconds"]),
            "ready": True,
            "readyNodes": list(readiness.ready_nodes),
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=f"mofed-{uuid.uuid4().hex[:12]}", outs=self._wait(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = [key for key in _WAIT_AGAIN_ON if str(olds.get(key)) != str(news.get(key))]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._wait(news))


class MofedReadiness(pulumi.dynamic.Resource):
    """Created once MOFED is ready on every InfiniBand node (`ready` is then true)."""

    ready: pulumi.Output[bool]
    ready_nodes: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        kubeconfig: pulumi.Input[str],
        pools: Sequence[str],
        expected_nodes: int,
        policy_digest: str,
        timeout_seconds: int,
        opts: pulumi.ResourceOptions | None = None,
        mofed_image: DriverImage | None = None,
        namespace: str | None = None,
    ) -> None:
        """`mofed_image`: the driver the NicClusterPolicy asks for (None with host MOFED), whose pods in
        `namespace` (the Network Operator's) must run it."""
        image = None if mofed_image is None else {
            "repository": mofed_image.repository, "image": mofed_image.image, "version": mofed_image.version}
        super().__init__(
            MofedReadinessProvider(),
            name,
            {
                "kubeconfig": pulumi.Output.secret(kubeconfig),
                "pools": sorted(pools),
                "expectedNodes": expected_nodes,
                "mofedImage": image,
                "namespace": namespace,
                "policyDigest": policy_digest,
                "timeoutSeconds": timeout_seconds,
                "ready": None,
                "readyNodes": None,
            },
            opts,
        )
