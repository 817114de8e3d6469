"""`CrdEstablished`: a resource created once a CustomResourceDefinition an operator creates at runtime is served.

Custom resources of such a CRD (the nv-ipam `IPPool`, whose CRD the Network Operator creates) depend on it, so
they are sent only once the API server knows their kind (:mod:`gpu_operator.readiness.crd` says why the
provider's own retries do not suffice). A dynamic resource: `pulumi preview` never waits; a later `pulumi up`
waits again only when the CRD's name changes. It reads the CRD where Pulumi runs, with the stack's kubeconfig
(`get` on customresourcedefinitions).
"""

from __future__ import annotations

import uuid
from typing import Any

import pulumi
import pulumi.dynamic

from gpu_operator.readiness.crd import CrdNotEstablished, kubeconfig_crd_conditions, wait_for_crd

__all__ = ["CrdEstablished", "CrdEstablishedProvider"]

_WAIT_AGAIN_ON = ("crd",)


class CrdEstablishedProvider(pulumi.dynamic.ResourceProvider):
    """Waits on create and when the CRD changes; deleting waits for nothing."""

    def _reader(self, props: dict[str, Any]) -> Any:
        return kubeconfig_crd_conditions(props["kubeconfig"], str(props["crd"]))

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        try:
            wait_for_crd(str(props["crd"]), self._reader(props), float(props["timeoutSeconds"]),
                         float(props.get("pollSeconds", 2)))
        except CrdNotEstablished as error:
            raise RuntimeError(str(error)) from None
        return {"crd": props["crd"], "timeoutSeconds": int(props["timeoutSeconds"]), "established": True}

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(id_=f"crd-{uuid.uuid4().hex[:12]}", outs=self._wait(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = [key for key in _WAIT_AGAIN_ON if str(olds.get(key)) != str(news.get(key))]
        return pulumi.dynamic.DiffResult(changes=bool(changed), replaces=[], stables=[], delete_before_replace=False)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(outs=self._wait(news))


class CrdEstablished(pulumi.dynamic.Resource):
    """Created once the CRD `crd` (e.g. `ippools.nv-ipam.nvidia.com`) is Established."""

    established: pulumi.Output[bool]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], crd: str, timeout_seconds: int = 600,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            CrdEstablishedProvider(),
            name,
            {"kubeconfig": pulumi.Output.secret(kubeconfig), "crd": crd, "timeoutSeconds": timeout_seconds,
             "established": None},
            opts,
        )
