"""`DriverRollout`: a resource whose update waits until a new driver has reached every GPU node.

With `controller.waitForDriverRollout`, `pulumi up` after a change of the driver's template (`driver.version`,
its env, its image) does not end when the DaemonSet is updated - which only starts the rollout, the DaemonSet
being `OnDelete` - but when the operator controller has upgraded every node (see
`gpu_operator.readiness.driver_rollout`). A node that ends `upgrade-failed` fails the update at once with its
reason and the command that retries it; `controller.rolloutTimeoutSeconds` bounds the wait. `pulumi preview`
never waits (dynamic providers do not run on preview), and an update that does not touch the driver's template
does not wait. The reads run where Pulumi runs, with the stack's kubeconfig.
"""

from __future__ import annotations

import uuid
from typing import Any

import pulumi
import pulumi.dynamic

from gpu_operator.readiness import DriverRolloutFailed, DriverRolloutTimeout, kubeconfig_rollout_lister
from gpu_operator.readiness import wait_for_driver_rollout

__all__ = ["DriverRollout", "DriverRolloutProvider"]

#: Inputs whose change means "wait again"; the kubeconfig (a rotated credential) does not.
_WAIT_AGAIN_ON = ("driverDigest", "namespace", "timeoutSeconds")


class DriverRolloutProvider(pulumi.dynamic.ResourceProvider):
    """Waits on create and on a relevant update; deleting waits for nothing."""

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        read = kubeconfig_rollout_lister(props["kubeconfig"], props["namespace"])
        try:
            rollout = wait_for_driver_rollout(read, float(props["timeoutSeconds"]), float(props.get("pollSeconds", 10)))
        except (DriverRolloutFailed, DriverRolloutTimeout) as error:
            raise RuntimeError(f"controller.waitForDriverRollout: {error}") from None
        return {"driverDigest": props["driverDigest"], "namespace": props["namespace"],
                "timeoutSeconds": int(props["timeoutSeconds"]), "upgradedNodes": len(rollout.done)}

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=f"driver-rollout-{uuid.uuid4().hex[:12]}", outs=self._wait(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = [key for key in _WAIT_AGAIN_ON if str(olds.get(key)) != str(news.get(key))]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._wait(news))


class DriverRollout(pulumi.dynamic.Resource):
    """Created (or updated) once every GPU node runs the driver DaemonSet's newest template."""

    upgraded_nodes: pulumi.Output[int]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], namespace: str, driver_digest: str,
                 timeout_seconds: int, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            DriverRolloutProvider(), name,
            {"kubeconfig": pulumi.Output.secret(kubeconfig), "namespace": namespace, "driverDigest": driver_digest,
             "timeoutSeconds": timeout_seconds, "upgradedNodes": None},
            opts)
